"""The bad-input corpus of issue 14: every row of its table, and the CLI's subcommands fed
malformed input. Each ends in one line `qgpu CMD: error: ...` and exit 1 (Ctrl-C: one
line and 130; a closed pipe: quiet), or a clear QgpuError from the Python API."""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import qgpu
from qgpu.cli import main
from qgpu.errors import LaunchError, ProtocolError
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import VOCAB_SIZE, encode_prompt, expected_trace, tok

QGPU = [sys.executable, "-c", "import sys; from qgpu.cli import main; sys.exit(main())"]
ASM = "block 0:\n  tid r1\n  shl r2, r1, 2\n  ld.global r3, [r2]\n  add r3, r3, 1\n" \
      "  jmp 1\nblock 1:\n  st.global [r2], r3\n  exit\n"
OOB = "__global__ void k(int *a, int *o) { o[threadIdx.x] = a[1000]; }\n"
MISALIGNED = "__global__ void k(int *a, int *o) { o[threadIdx.x] = *(int *)((char *)a + 2); }\n"
LOOP = "__global__ void k(int *o) { while (1) {} }\n"
DYNAMIC = ("extern __shared__ int s[];\n__global__ void k(int *o) { s[threadIdx.x] = 1; "
           "__syncthreads(); o[threadIdx.x] = s[3 - threadIdx.x]; }\n")
COPY = "__global__ void k(const int *a, int *o) { o[threadIdx.x] = a[threadIdx.x] + 1; }\n"


def one_error(capsys, cmd: str, argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"qgpu {cmd}: error: ") and len(err.strip().splitlines()) == 1, err
    return err


@pytest.fixture
def files(tmp_path):
    for name, text in (("oob.cu", OOB), ("mis.cu", MISALIGNED), ("loop.cu", LOOP),
                       ("dyn.cu", DYNAMIC), ("copy.cu", COPY), ("k.s", ASM),
                       ("bad.cu", "__global__ void k(int *o) { o[0] = ; }\n"),
                       ("float.cu",
                        "__global__ void k(float *o) { o[0] = o[1] * (double)o[2] * o[3]; }\n")):
        (tmp_path / name).write_text(text)
    return tmp_path


# -- qgpu run --------------------------------------------------------------------------

@pytest.mark.parametrize("file, args, match", [
    ("oob.cu", ["--arg", "a=1,2", "--arg", "o=zeros:4"], "out-of-bounds global access"),
    ("mis.cu", ["--arg", "a=1,2", "--arg", "o=zeros:4"], "misaligned global access"),
    ("loop.cu", ["--arg", "o=zeros:4", "--budget", "500"], "budget exceeded"),
    ("dyn.cu", ["--arg", "o=zeros:4"], "extern __shared__ array sized at launch"),
    ("bad.cu", ["--arg", "o=zeros:4"], "bad.cu:1"),
    ("float.cu", ["--arg", "o=zeros:4"], "double"),
    ("copy.cu", ["--arg", "a=1,2", "--arg", "o=zeros:4", "--check"], "needs --engine model"),
    ("copy.cu", ["--arg", "a=x", "--arg", "o=zeros:4"], "not an integer"),
    ("copy.cu", ["--arg", "a=99999999999", "--arg", "o=zeros:4"], "does not fit"),
    ("copy.cu", ["--arg", "a=zeros:-3", "--arg", "o=zeros:4"], "negative"),
    ("copy.cu", ["--arg", "a=zeros:99999", "--arg", "o=zeros:4"], "words of global memory"),
    ("copy.cu", ["--arg", "a=zeros:0", "--arg", "o=zeros:4"], "empty array"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--arg", "z=1"], "no parameter"),
    ("copy.cu", ["--arg", "a=1"], "missing --arg"),
    ("copy.cu", ["--arg", "a"], "NAME=VALUE"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--kernel", "nope"], "no __global__"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--grid", "16777217"],
     "grid of 16777217"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--block", "1025"], "block of 1025"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--grid", "9", "--engine", "model"],
     "grid of 9 CTAs; the model machine runs 1..4"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--block", "x"],
     "--block 'x': give 1 to 3 integers"),
    ("copy.cu", ["--arg", "a=1", "--arg", "o=zeros:4", "--engine", "gpu"], "invalid choice"),
    ("missing.cu", ["--arg", "o=zeros:4"], "cannot read"),
])
def test_run_errors(files, capsys, file, args, match):
    argv = ["run", str(files / file), "--grid", "1", "--block", "4", "--engine", "interp", *args]
    assert match in one_error(capsys, "run", argv)


def test_run_reads_a_const_input_and_writes_the_output(files, capsys):
    assert main(["run", str(files / "copy.cu"), "--grid", "1", "--block", "4", "--json",
                 "--engine", "interp",
                 "--arg", "a=1,2,3,4", "--arg", "o=zeros:4"]) == 0
    assert json.loads(capsys.readouterr().out)["args"] == {"a": [1, 2, 3, 4],
                                                           "o": [2, 3, 4, 5]}


# -- qgpu trace / asm / merge / validate-gpu / chat / export-machine --------------------

@pytest.mark.parametrize("text, match", [
    ("", "not JSON"), ("[1, 2", "not JSON"), ("5", "not int"), ("null", "NoneType"),
    ('"abc"', "not str"), ("[999999999]", "outside the vocabulary"), ("[-1]", "outside"),
    ('[1.5]', "not a token id"), ('[true]', "not a token id"), ("[1, 2, 3]", "no GO"),
    ('{"prompt": []}', "no trace"), ('{"prompt": 3, "trace": []}', "not int"),
    ('{"prompt": [], "trace": []}', "stream ends"),
])
def test_trace_errors(tmp_path, capsys, text, match):
    (tmp_path / "t.json").write_text(text)
    assert match in one_error(capsys, "trace", ["trace", str(tmp_path / "t.json")])


def test_trace_of_binary_and_truncated_streams(tmp_path, capsys):
    prog = assemble(ASM)
    prompt = encode_prompt(prog, 1, 4, [1, 2, 3, 4])
    trace = expected_trace(run_launch(prog, 1, 4, [1, 2, 3, 4]).events)
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00garbage")
    one_error(capsys, "trace", ["trace", str(tmp_path / "b.json")])
    for cut in (1, len(trace) // 2, len(trace) - 1):
        (tmp_path / "t.json").write_text(json.dumps({"prompt": prompt, "trace": trace[:cut]}))
        assert "stream ends" in one_error(capsys, "trace", ["trace", str(tmp_path / "t.json")])
    for cut in (3, len(prompt) - 1):
        (tmp_path / "p.json").write_text(json.dumps({"prompt": prompt[:cut], "trace": trace}))
        one_error(capsys, "trace", ["trace", str(tmp_path / "p.json")])
    bad = list(trace)
    bad[0] = tok("HALT")              # HALT first: not what the machine schedules
    (tmp_path / "h.json").write_text(json.dumps({"prompt": prompt, "trace": bad}))
    assert "HALT" in one_error(capsys, "trace", ["trace", str(tmp_path / "h.json")])


@pytest.mark.parametrize("args, match", [
    (["--run", "--mem", "abc"], "not an integer"),
    (["--run", "--mem", "99999999999"], "does not fit 32 bits"),
    (["--run", "--mem", ",".join(["1"] * 200)], "global memory has 128"),
    (["--run", "--grid", "0"], "grid of 0"),
    (["--run", "--block", "77"], "block of 77"),
])
def test_asm_errors(files, capsys, args, match):
    assert match in one_error(capsys, "asm", ["asm", str(files / "k.s"), *args])


def test_asm_fault_and_missing_file(files, capsys):
    (files / "f.s").write_text("block 0:\n  ld.global r1, [4000]\n  exit\n")
    assert "out-of-bounds" in one_error(capsys, "asm", ["asm", str(files / "f.s"), "--run"])
    one_error(capsys, "asm", ["asm", str(files / "nope.s")])


def test_merge_errors(tmp_path, capsys):
    one_error(capsys, "merge", ["merge", "--base", str(tmp_path / "nowhere"), "--out",
                                str(tmp_path / "o")])
    (tmp_path / "config.json").write_text("not json")
    assert "config.json" in one_error(capsys, "merge", ["merge", "--base", str(tmp_path),
                                                        "--out", str(tmp_path / "o")])
    (tmp_path / "config.json").write_text("[1]")
    one_error(capsys, "merge", ["merge", "--base", str(tmp_path), "--out", str(tmp_path / "o")])
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_validate_gpu_without_cupy_says_so_first(tmp_path, capsys):
    out = tmp_path / "report"
    t0 = time.perf_counter()
    assert "CuPy is not installed" in one_error(capsys, "validate-gpu", [
        "validate-gpu", "--out", str(out)])
    assert time.perf_counter() - t0 < 5 and not out.exists()   # no reference run first


def test_validate_gpu_broken_files(tmp_path, capsys):
    (tmp_path / "r.json").write_text("[")
    one_error(capsys, "validate-gpu", ["validate-gpu", "--rebuild", str(tmp_path / "r.json")])
    (tmp_path / "r.json").write_text('{"format": 1}')
    assert "not a validation journal" in one_error(capsys, "validate-gpu", [
        "validate-gpu", "--rebuild", str(tmp_path / "r.json")])


def test_chat_without_the_chat_extra(tmp_path, capsys, monkeypatch):
    (tmp_path / "qgpu_merge.json").write_text(json.dumps({
        "circuit": "machine", "gpu_token_offset": 100, "gpu_tokens": 5, "base_layers": 2,
        "circuit_info": {"spec": {"slots": 1, "stages": 4, "warps": 4, "ops": ["add"]},
                         "memory": {"layer": 0, "head": 0, "rows": 1, "columns": 1}}}))
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "tokenizers" else real(name, *a))
    assert "pip install 'qgpu[chat]'" in one_error(capsys, "chat", [
        "chat", "--model", str(tmp_path)])
    one_error(capsys, "chat", ["chat", "--model", str(tmp_path / "nowhere")])


def test_demo_errors(capsys):
    assert "invalid choice" in one_error(capsys, "demo", ["demo", "--engine", "gpu"])
    assert "unrecognized" in one_error(capsys, "demo", ["demo", "--frob"])


def test_export_machine_refuses_a_full_directory(tmp_path, capsys):
    (tmp_path / "x").write_text("")
    assert "not empty" in one_error(capsys, "export-machine", [
        "export-machine", "--out", str(tmp_path)])


# -- signals and pipes ------------------------------------------------------------------

def _env():
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


def test_ctrl_c_is_one_line_and_exit_130(files):
    # SIGINT as a terminal delivers it: a runner started in the background (`cmd &` in a
    # script) passes SIGINT on ignored, and Python then installs no KeyboardInterrupt
    proc = subprocess.Popen([*QGPU, "run", str(files / "loop.cu"), "--grid", "1", "--block",
                             "4", "--engine", "interp", "--arg", "o=zeros:4", "--budget",
                             "100000000"],
                            stderr=subprocess.PIPE, text=True, env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(8)
        proc.send_signal(signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
    finally:
        proc.kill()   # never leave the runaway launch behind (it grows to GiBs)
    assert proc.returncode == 130
    assert err.strip() == "qgpu run: interrupted"


def test_closed_pipe_is_quiet(files):
    prog = assemble(ASM)
    stream = encode_prompt(prog, 1, 4, list(range(4)))
    stream += expected_trace(run_launch(prog, 1, 4, list(range(4))).events)
    (files / "t.json").write_text(json.dumps(stream * 1))
    shell = (f"{' '.join(map(repr, QGPU[:2]))} '{QGPU[2]}' trace --raw {files / 't.json'} "
             f"| head -c 1 >/dev/null; exit ${{PIPESTATUS[0]}}")
    big = files / "big.s"   # a long trace, so the pipe closes while qgpu still writes
    big.write_text("block 0:\n  add r1, r1, 1\n  setlt.s r2, r1, 3000\n  br r2, 0, 1\n"
                   "block 1:\n  exit\n")
    shell = (f"{sys.executable} -c 'import sys; from qgpu.cli import main; sys.exit(main())' "
             f"asm --run {big} | head -c 10 >/dev/null; exit ${{PIPESTATUS[0]}}")
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, env=_env(),
                          timeout=120)
    assert proc.stderr == "" and proc.returncode in (0, 141), proc.stderr


# -- the Python API ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def copy_kernel():
    return qgpu.compile(COPY, filename="copy.cu", engine="interp").get_function("k")


def test_read_only_input_array(copy_kernel):
    a = np.arange(4, dtype=np.int32)
    a.flags.writeable = False
    o = np.zeros(4, np.int32)
    copy_kernel(1, 4, [a, o])
    assert o.tolist() == [1, 2, 3, 4] and a.tolist() == [0, 1, 2, 3]


def test_read_only_output_array_is_a_clear_error_after_the_other_outputs(tmp_path):
    k = qgpu.compile("__global__ void k(int *a, int *o) { a[threadIdx.x] = 9; "
                     "o[threadIdx.x] = 5; }\n", engine="interp").get_function("k")
    a, o = np.zeros(4, np.int32), np.zeros(4, np.int32)
    a.flags.writeable = False
    with pytest.raises(LaunchError, match="wrote to a, passed as read-only"):
        k(1, 4, [a, o])
    assert o.tolist() == [5] * 4


def test_zero_length_and_overlapping_arrays(copy_kernel):
    with pytest.raises(LaunchError, match="empty array"):
        copy_kernel(1, 4, [np.zeros(0, np.int32), np.zeros(4, np.int32)])
    buf = np.arange(8, dtype=np.int32)
    with pytest.raises(LaunchError, match="overlap"):
        copy_kernel(1, 4, [buf[0:4], buf[2:6]])
    same = buf[0:4]
    copy_kernel(1, 4, [same, buf[0:4].view(np.int32)])   # the same bytes: an alias
    assert buf[:4].tolist() == [1, 2, 3, 4]


def test_dynamic_shared_memory_is_sized_at_launch():
    k = qgpu.compile(DYNAMIC, engine="interp").get_function("k")
    with pytest.raises(LaunchError, match=r"kernel.cu:2: kernel k uses an extern __shared__ "
                                          r"array sized at launch: give its size"):
        k(1, 4, [np.zeros(4, np.int32)])
    with pytest.raises(LaunchError, match="0 bytes of static __shared__ data \\+ 49156 dynamic"):
        k(1, 4, [np.zeros(4, np.int32)], shared_mem=49156)
    o = np.zeros(4, np.int32)
    k(1, 4, [o], shared_mem=16)
    assert o.tolist() == [1, 1, 1, 1]


def test_a_token_outside_the_vocabulary_from_a_model_is_a_protocol_error():
    """A stand-in for a corrupted model's engine: its second token is outside the
    vocabulary; the host names the token and its position."""
    from qgpu.runtime.compiled import DEFAULT_SPEC
    from qgpu.runtime.generate import generate_launch

    prog = assemble(ASM)
    good = expected_trace(run_launch(prog, 1, 4, [0] * 4).events)

    class Corrupt:
        def new_state(self):
            return []

        def consume(self, state, tokens):
            pass

        def step_greedy(self, state, token):
            state.append(token)
            return good[0] if len(state) == 1 else VOCAB_SIZE + 7

    class Machine:
        spec, engine = DEFAULT_SPEC, Corrupt()

        def check(self, program, grid, block):
            pass

    with pytest.raises(ProtocolError, match=f"token id {VOCAB_SIZE + 7} at trace position 1"):
        generate_launch(Machine(), prog, 1, 4, [0] * 4)


# -- CUDA and PTX the front end refuses ---------------------------------------------------

REFUSED = {
    "long": ("__global__ void k(int *o) { long long x = (long long)o[0] * o[1]; "
             "o[2] = (int)(x / o[3]); }", "64-bit"),
    "long_param": ("__global__ void k(int *o, long n) { o[0] = n; }", "64 bits on a GPU"),
    "size_t": ("__global__ void k(int *o) { size_t i = threadIdx.x; o[i] = 1; }",
               "'size_t' is 64 bits on a GPU"),
    "local": ("__global__ void k(int *o) { int t[8]; for (int i = 0; i < 8; i++) "
              "t[i] = o[i] * 3; o[0] = t[o[9] & 7]; }", "local memory"),
    "double": ("__global__ void k(int *o) { o[0] = (int)(o[1] * 1.5); }", "double"),
    "approx": ("__global__ void k(unsigned *o) { o[0] = __float_as_uint(__nvvm_ex2_approx_f("
               "__uint_as_float(o[1]))); }", "approximate float"),
    "noinline": ("__device__ __noinline__ int f(int x) { return x * 3; }\n"
                 "__global__ void k(int *o) { o[0] = f(o[1]); }", "did not inline"),
    "shared_big": ("__global__ void k(int *o) { __shared__ int s[12289]; s[threadIdx.x] = 1; "
                   "__syncthreads(); o[0] = s[o[1]]; }", "shared memory holds 49152 bytes"),
    "printf": ("#include <cstdio>\n__global__ void k(int *o) { printf(\"%lld\", 1LL << 40); }",
               "printf conversion '%lld' prints a 64-bit value"),
    "syntax": ("__global__ void k(int *o) { o[0] = }", "syntax.cu:1"),
    "no_kernel": ("__device__ int f(int x) { return x; }", "0 kernels"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_refused_cuda_is_one_line(tmp_path, capsys, name):
    src, match = REFUSED[name]
    (tmp_path / f"{name}.cu").write_text(src + "\n")
    err = one_error(capsys, "run", ["run", str(tmp_path / f"{name}.cu"), "--grid", "1",
                                    "--block", "4", "--engine", "interp", "--arg",
                                    "o=zeros:10"])
    assert match in err
