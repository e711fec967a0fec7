"""The qgpu command: demo, asm, trace, error reporting; the README's set-up contract."""

import json
import re
from pathlib import Path

import pytest

from qgpu.cli import main
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import encode_prompt, expected_trace
from tests.asm_programs import ADD_100

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_demo_is_written_by_the_model_and_prints_32(capsys):
    assert main(["demo"]) == 0                           # the compiled model by default
    out = capsys.readouterr().out
    assert "engine: model" in out and "result: 32" in out and "HALT" in out
    tokens = int(re.search(r"trace: (\d+) tokens", out).group(1))
    assert tokens <= 47                                  # the seed's count


def test_demo_on_the_interpreter_prints_32(capsys):
    assert main(["demo", "--engine", "interp"]) == 0
    out = capsys.readouterr().out
    assert "engine: interp" in out and "result: 32" in out and "HALT" in out


def test_asm_round_trip_and_run(tmp_path, capsys):
    f = tmp_path / "k.s"
    f.write_text(ADD_100)
    assert main(["asm", str(f)]) == 0
    assert assemble(capsys.readouterr().out).blocks == assemble(ADD_100).blocks
    assert main(["asm", str(f), "--run", "--block", "3", "--mem", "1,2,3"]) == 0
    out = capsys.readouterr().out
    assert "memory: [101, 102, 103]" in out


def test_asm_error_names_the_line(tmp_path, capsys):
    f = tmp_path / "bad.s"
    f.write_text("block 0:\n  frob r1\n  exit\n")
    assert main(["asm", str(f)]) == 1
    err = capsys.readouterr().err
    assert "line 2" in err and "frob" in err and len(err.strip().splitlines()) == 1


def test_trace_decodes_a_stream(tmp_path, capsys):
    prog = assemble(ADD_100)
    trace = expected_trace(run_launch(prog, 1, 3, [1, 2, 3]).events)
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"prompt": encode_prompt(prog, 1, 3, [1, 2, 3]), "trace": trace}))
    assert main(["trace", str(f)]) == 0
    out = capsys.readouterr().out
    assert "r3=[101 102 103]" in out and "HALT" in out


def test_readme_opens_with_the_two_commands_and_ci_runs_the_test_one():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```(?:bash)?\n(.*?)```", readme, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["./dev demo", "./dev test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./dev test" in ci


def test_python_dash_m_runs_the_cli():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "qgpu.cli", "--help"], capture_output=True,
                         text=True, cwd=ROOT)
    assert out.returncode == 0 and "usage: qgpu" in out.stdout


def test_demo_kernel_ships_in_the_package():
    """`qgpu demo` reads its source from the package (a wheel has no kernels/); the
    suite's kernels/dot.cu is the same file."""
    import tomllib

    from qgpu.examples import demo_kernel_source
    from qgpu.suite import kernel_source

    assert "__global__ void dot" in demo_kernel_source()
    assert kernel_source("dot") == demo_kernel_source()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "examples/*.cu" in data["tool"]["setuptools"]["package-data"]["qgpu"]
