"""A merged machine checkpoint on disk (slow: the dense float32 checkpoint of the machine
merged into a tiny base is ~14 GB; written once per session and removed after): `qgpu
merge` makes the machine the default circuit and records what the runtime needs; a later
process (`load_machine_checkpoint`, `qgpu run --model`, `qgpu chat --model`) runs
launches token-exact on it with results read from its state, and its text path is the
base's greedy text."""

import io
import json
import shutil
import sys

import pytest

from qgpu.cli import main
from qgpu.isa.asm import assemble
from qgpu.model.text_engine import TextEngine
from qgpu.runtime.checkpoint import load_machine_checkpoint
from qgpu.runtime.generate import generate_launch
from tests.runtime.programs import MEMORY_PROGRAMS

from .helpers import write_release_layout
from .machine_helpers import machine_base, write_tokenizer

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("merged_machine")]
SEVEN = "__global__ void k(int *out) { if (threadIdx.x == 0) out[0] = 7 + out[1]; }\n"


def _test_ops() -> tuple[str, ...]:
    import qgpu
    from qgpu.circuit.machine.spec import MachineSpec

    programs = [assemble(MEMORY_PROGRAMS["memory"]),
                qgpu.compile(SEVEN, engine="interp").get_function("k").program]
    return MachineSpec.for_programs(programs).op_names


@pytest.fixture(scope="module")
def merged_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("machine_merge")
    (root / "base").mkdir()
    write_release_layout(root / "base", machine_base("m160_tied_full_first", seed=5))
    write_tokenizer(root / "base")
    # the machine is the default circuit; --ops keeps the dense checkpoint small (the
    # operations of the programs these tests run: whole families)
    assert main(["merge", "--base", str(root / "base"), "--out", str(root / "out"),
                 "--ops", ",".join(_test_ops()), "--quiet"]) == 0
    yield root
    shutil.rmtree(root)  # ~14 GB


@pytest.fixture(scope="module")
def machine(merged_dir):
    return load_machine_checkpoint(merged_dir / "out")


def test_layout_file_records_the_machine(merged_dir):
    info = json.loads((merged_dir / "out" / "qgpu_merge.json").read_text())
    assert info["circuit"] == "machine" and info["gpu_token_offset"] == 160
    circuit = info["circuit_info"]
    assert circuit["spec"]["slots"] == 1 and "add" in circuit["spec"]["ops"]
    assert circuit["memory"]["rows"] == 128 and circuit["memory"]["layer"] < info[
        "circuit_layers"]
    assert len(circuit["source_digest"]) == 12 and info["tokenizer"]
    body = json.loads((merged_dir / "out" / "tokenizer.json").read_text())
    assert {"<|gpu:HALT|>", "<|gpu:EXEC(0,w0,0123)|>"} <= {t["content"]
                                                           for t in body["added_tokens"]}


def test_merge_stores_the_launch_plan_and_a_launch_loads_only_it(merged_dir, machine):
    from qgpu.runtime.checkpoint import launch_plan_path

    assert launch_plan_path(merged_dir / "out").is_file()   # written by qgpu merge
    assert machine.weights is None and machine.engine.inner.weights is None  # from the plan


def test_launch_from_the_checkpoint(machine):
    from qgpu.interp import run_launch
    from qgpu.protocol import expected_trace

    prog = assemble(MEMORY_PROGRAMS["memory"])
    memory = [5 * a + 1 for a in range(24)]
    res = run_launch(prog, 1, 4, memory=memory)
    run = generate_launch(machine, prog, 1, 4, memory)
    assert run.trace == expected_trace(res.events) and run.memory == res.memory


def test_text_path_is_the_bases_greedy_text(merged_dir, machine):
    from qgpu.chat.text import TextModel

    assert isinstance(machine.inner, TextEngine)   # the base's layers, bf16, mapped
    # the same engine over the base alone
    base = TextModel.from_directory(merged_dir / "out",
                                    TextEngine.from_directory(merged_dir / "base"), 160,
                                    max_new_tokens=12)
    text = TextModel.from_directory(merged_dir / "out", machine.inner, 160, max_new_tokens=12)
    ids = text.encode("<|im_start|>user w3 w7 w11<|im_end|>")
    assert ids[0] == text.tokenizer.token_to_id("<|im_start|>") and len(ids) == 6
    assert text.generate_ids(ids) == base.generate_ids(ids)
    assert isinstance(text.generate("w1 w2"), str)


def test_cli_run_with_model_and_check(merged_dir, tmp_path, capsys):
    (tmp_path / "k.cu").write_text(SEVEN)
    assert main(["run", str(tmp_path / "k.cu"), "--grid", "1", "--block", "4", "--model",
                 str(merged_dir / "out"), "--check", "--json", "--arg", "out=0,35"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["args"] == {"out": [42, 35]} and out["engine"] == "model"


def test_cli_chat_normal_mode(merged_dir, tmp_path, capsys, monkeypatch):
    (tmp_path / "k.cu").write_text(SEVEN)
    lines = f"w5 w6\n/run {tmp_path}/k.cu --grid 1 --block 4 --arg out=0,35\n/quit\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    assert main(["chat", "--model", str(merged_dir / "out"), "--max-new-tokens", "6"]) == 0
    out = capsys.readouterr().out
    assert "out: [0, 35] -> [42, 35]" in out and "token-exact" in out


def test_an_edited_layout_or_tensor_is_refused_by_name(merged_dir, tmp_path, capsys):
    """Issue 36: one number of qgpu_merge.json edited (the GPU token offset), or one byte
    of a circuit tensor flipped in place with its modification time restored: `qgpu run`
    names the checkpoint's problem at load instead of running (a stored launch plan of
    the old bytes is not reused); restored, the checkpoint runs again."""
    import os

    from qgpu.model.checkpoint import checkpoint_files, read_safetensors_header

    out = merged_dir / "out"
    (tmp_path / "k.cu").write_text(SEVEN)
    argv = ["run", str(tmp_path / "k.cu"), "--grid", "1", "--block", "4", "--model",
            str(out), "--arg", "out=0,35"]
    layout = out / "qgpu_merge.json"
    text = layout.read_text()
    info = json.loads(text)
    try:
        layout.write_text(json.dumps({**info, "gpu_token_offset": 159}))
        assert main(argv) == 1
        assert "gpu_token_offset 159 is not where the GPU tokens start" in \
            capsys.readouterr().err
    finally:
        layout.write_text(text)
    tensor = "model.layers.0.mlp.down_proj.weight"
    path = next(p for p in checkpoint_files(out) if tensor in read_safetensors_header(p)[0])
    header, data_start = read_safetensors_header(path)
    at = data_start + header[tensor]["data_offsets"][0] + 2
    st = path.stat()

    def flip():
        with open(path, "r+b") as f:
            f.seek(at)
            byte = f.read(1)[0]
            f.seek(at)
            f.write(bytes([byte ^ 0x20]))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    flip()
    try:
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"{tensor}[0:" in err and "is not what qgpu merge wrote" in err
    finally:
        flip()
    assert main(argv) == 0 and "[42, 35]" in capsys.readouterr().out


def test_cli_chat_with_q8_text_weights(merged_dir, capsys, monkeypatch):
    from qgpu.cli.chat import open_session
    from qgpu.model.q8 import Q8Matrix

    monkeypatch.setattr(sys, "stdin", io.StringIO("w5 w6\n/quit\n"))
    assert main(["chat", "--model", str(merged_dir / "out"), "--max-new-tokens", "4",
                 "--text-weights", "q8"]) == 0
    session = open_session(str(merged_dir / "out"), text_weights="q8")
    gate = session.language.engine.weights["model.layers.0.mlp.gate_proj.weight"]
    assert isinstance(gate, Q8Matrix)   # the language part runs on the 8-bit weights


def test_qgpu_run_refuses_a_demo_checkpoint(tmp_path, capsys):
    from qgpu.merge import merge_checkpoint
    from qgpu.model.checkpoint import save_checkpoint

    from .helpers import demo_circuit, random_base

    _, part = demo_circuit("register_echo")
    save_checkpoint(random_base("h64_tied"), tmp_path / "base")
    merge_checkpoint(tmp_path / "base", part, tmp_path / "out")
    (tmp_path / "k.cu").write_text(SEVEN)
    assert main(["run", str(tmp_path / "k.cu"), "--grid", "1", "--block", "4", "--model",
                 str(tmp_path / "out"), "--arg", "out=0,35"]) == 1
    assert "not the machine" in capsys.readouterr().err
