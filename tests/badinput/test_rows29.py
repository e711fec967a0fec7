"""Issue 29's table, the rows not covered by test_outputs, test_stored_files and the
thread/RSS tests (tests/model/test_fast_threads.py, tests/runtime/test_threads.py): each
a one-line error or the right behaviour."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import qgpu
from qgpu.cli import main
from qgpu.cli.html import BIG_PAGE, write_page
from qgpu.cuda import compile as compile_cuda
from qgpu.errors import CompileError, LaunchError, QgpuError

from .test_rows import one_error

COPY = "__global__ void k(const int *a, int *o) { o[threadIdx.x] = a[threadIdx.x] + 1; }\n"
QGPU = [sys.executable, "-c", "import sys; from qgpu.cli import main; sys.exit(main())"]


@pytest.mark.parametrize("cmd, extra", [
    ("run", ["--grid", "1", "--block", "4", "--arg", "a=1", "--arg", "o=zeros:4",
             "--engine", "interp"]),
    ("asm", []),
    ("trace", []),
])
def test_dev_zero_is_read_up_to_a_limit(capsys, cmd, extra):
    err = one_error(capsys, cmd, [cmd, "/dev/zero", *extra])
    assert "/dev/zero" in err and "larger than" in err


def _kernel():
    return compile_cuda(COPY).get_function("k")


@pytest.mark.parametrize("call, match", [
    (lambda k: k(1, 4, (x for x in (np.ones(4, np.int32), np.zeros(4, np.int32)))),
     "generator"),
    (lambda k: k(1, (3, None), (np.ones(4, np.int32), np.zeros(4, np.int32))),
     "every dimension must be an int"),
    (lambda k: k(1, 4, None), "NoneType"),
    (lambda k: k(1, 4, (np.ones(4, np.int32), np.zeros(4, np.int32)), budget=-1),
     "at least 1"),
    (lambda k: k(1, 4, (np.ones(4, np.int32), np.zeros(4, np.int32)), budget=2.5),
     "at least 1"),
])
def test_api_arguments_are_launch_errors(call, match):
    out_before = np.zeros(4, np.int32)
    with pytest.raises(LaunchError, match=match):
        call(_kernel())
    assert not out_before.any()


def test_a_generator_does_not_run_the_kernel():
    out = np.zeros(4, np.int32)
    with pytest.raises(LaunchError):
        _kernel()(1, 4, (x for x in (np.ones(4, np.int32), out)))
    assert not out.any()  # refused before the launch ran


@pytest.mark.parametrize("source", [None, 3, ["__global__ void k() {}"]])
def test_compile_takes_text_or_bytes(source):
    with pytest.raises(CompileError, match="CUDA C source \\(text or bytes\\)"):
        qgpu.compile(source)


def _env_run(env: dict, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*QGPU, *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


@pytest.mark.parametrize("value", ["0", "-1", "999", "banana"])
def test_qgpu_threads_values_are_named(value):
    code = ("from qgpu.model import fast_native; "
            "print(fast_native.threads())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "QGPU_THREADS": value}, timeout=120)
    assert r.stdout.strip() == "1"
    assert r.stderr.count("\n") == 1 and f"QGPU_THREADS='{value}' is not 1 or 2" in r.stderr


def test_qgpu_progress_banana_is_named(monkeypatch, capsys):
    from qgpu import errors
    from qgpu.progress import progress_enabled

    monkeypatch.setenv("QGPU_PROGRESS", "banana")
    monkeypatch.setattr(errors, "_said", set())
    assert progress_enabled() is None and progress_enabled() is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "QGPU_PROGRESS='banana' is not 0 or 1" in err


def test_empty_home_does_not_build_in_the_root(monkeypatch):
    """HOME= (or /): the native kernel's cache is the checkout's, not /.cache."""
    from pathlib import Path

    from qgpu.model import fast_native

    for name in ("QGPU_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    checkout = Path(fast_native.__file__).resolve().parents[2] / ".cache" / "qgpu" / "native"
    for home in ("", "/", "relative/dir"):
        monkeypatch.setenv("HOME", home)
        assert fast_native._cache_dir() == checkout


def test_qgpu_clang_that_does_not_exist_is_an_error(monkeypatch, tmp_path):
    monkeypatch.setenv("QGPU_CLANG", str(tmp_path / "nonexistent"))
    with pytest.raises(CompileError, match="QGPU_CLANG=.*nonexistent: no such program"):
        compile_cuda(COPY + "// another source: not cached\n")


@pytest.mark.parametrize("flags, match", [
    (["--kernels", "nope"], "no suite kernel named nope"),
    (["--kernels", ""], "no suite kernel"),
    (["--engine", "bogus"], "--engine bogus: no such engine"),
])
def test_validate_gpu_refuses_unknown_kernels_and_engines(tmp_path, capsys, flags, match):
    ref = tmp_path / "ref.json"
    err = one_error(capsys, "validate-gpu", ["validate-gpu", "--prepare", str(ref), *flags])
    assert match in err and not ref.exists()


def test_trace_streams_and_a_big_page_is_announced(tmp_path, capsys):
    """Records are printed as they are decoded (iter_trace); a page over ~20 MB is said
    before it is written."""
    out = tmp_path / "t.json"
    res = _kernel()(1, 4, (np.arange(4, dtype=np.int32), np.zeros(4, np.int32)))
    from qgpu.protocol import encode_prompt

    prompt = encode_prompt(res.program, 1, 4, list(res.initial))
    out.write_text(json.dumps({"prompt": prompt, "trace": list(res.trace)}))
    assert main(["trace", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("launch:") and any("halt" in ln.lower() for ln in lines)
    page = tmp_path / "big.html"
    write_page(str(page), {"padding": "x" * (BIG_PAGE + 1)} | _page_data(res))
    err = capsys.readouterr().err
    assert "MB (a long launch)" in err.splitlines()[0] and page.stat().st_size > BIG_PAGE


def _page_data(res) -> dict:
    from qgpu.view import result_data

    return result_data(res)


def test_every_api_mistake_is_a_qgpu_error():
    k = _kernel()
    for bad in ((1, 4, "ab"), (1, 4, 7), ("1", 4, ())):
        with pytest.raises(QgpuError):
            k(*bad)


def test_neighbour_overwrite_is_a_fault_on_the_interpreter(tmp_path, capsys):
    src = tmp_path / "oob.cu"
    src.write_text("__global__ void k(int *out, int *nb) { out[threadIdx.x] = 7; }\n")
    err = one_error(capsys, "run", ["run", str(src), "--grid", "1", "--block", "4",
                                    "--engine", "interp", "--arg", "out=0",
                                    "--arg", "nb=zeros:4"])
    assert "index 1 of array out, which has 1 word" in err


@pytest.mark.slow
def test_neighbour_overwrite_is_a_check_mismatch_on_the_model(tmp_path, capsys):
    """The model's fault detector sees the 128 words, not the arrays: --check says so."""
    from qgpu.runtime.compiled import load_machine

    load_machine()  # compiled or mapped first: its progress lines are not the error
    capsys.readouterr()
    src = tmp_path / "oob.cu"
    src.write_text("__global__ void k(int *out, int *nb) { out[threadIdx.x] = 7; }\n")
    err = one_error(capsys, "run", ["run", str(src), "--grid", "1", "--block", "4",
                                    "--check", "--arg", "out=0", "--arg", "nb=zeros:4"])
    assert "--check" in err and "TRAP(out-of-bounds-global" in err
    assert "index 1 of array out" in err and "not the arrays" in err
