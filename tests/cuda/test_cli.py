"""qgpu run, end to end: on the compiled model by default, on the interpreter with
--engine interp."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qgpu.cli import main

KERNELS = """
__global__ void vadd(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void negate(unsigned *u) { u[threadIdx.x] = 0u - u[threadIdx.x]; }
"""


@pytest.fixture
def cu(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(KERNELS)
    return str(path)


@pytest.fixture
def machine():
    """The default engine is the compiled model: loaded before the command runs, so that a
    first compile's progress (stderr) is not part of the command's output."""
    from qgpu.runtime.compiled import load_machine

    return load_machine(progress=False)


def run(capsys, *argv):
    rc = main(["run", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_output(cu, capsys, machine):
    rc, out, err = run(capsys, cu, "--grid", "1", "--block", "4", "--kernel", "vadd",
                       "--json", "--arg", "a=1,2,3,-4", "--arg", "b=10,20,30,40",
                       "--arg", "c=zeros:4", "--arg", "n=4")
    assert rc == 0 and err == ""
    doc = json.loads(out)
    assert doc["kernel"] == "vadd" and doc["engine"] == "model"  # the default
    assert doc["args"] == {"a": [1, 2, 3, -4], "b": [10, 20, 30, 40], "c": [11, 22, 33, 36]}
    assert isinstance(doc["tokens"], int) and doc["tokens"] > 0
    rc, out, _ = run(capsys, cu, "--grid", "1", "--block", "4", "--kernel", "vadd", "--json",
                     "--engine", "interp", "--arg", "a=1,2,3,-4", "--arg", "b=10,20,30,40",
                     "--arg", "c=zeros:4", "--arg", "n=4")
    interp = json.loads(out)
    assert rc == 0 and interp["engine"] == "interp"
    assert interp["args"] == doc["args"] and interp["tokens"] == doc["tokens"]


def test_unsigned_values_print_unsigned(cu, capsys, machine):
    rc, out, _ = run(capsys, cu, "--grid", "1", "--block", "2", "--kernel", "negate",
                     "--json", "--arg", "u=1,0")
    assert rc == 0 and json.loads(out)["args"]["u"] == [4294967295, 0]


def test_readable_report(cu, capsys, machine):
    rc, out, _ = run(capsys, cu, "--grid", "1", "--block", "2", "--kernel", "vadd",
                     "--arg", "a=1,2", "--arg", "b=3,4", "--arg", "c=zeros:2", "--arg", "n=2")
    assert rc == 0
    assert "before [0, 0]" in out and "after  [4, 6]" in out and "tokens" in out


@pytest.mark.parametrize("argv,match", [
    (["--kernel", "vadd", "--arg", "a=1"], "missing --arg for b, c, n"),
    (["--kernel", "vadd", "--arg", "zz=1"], "has no parameter 'zz'"),
    (["--kernel", "vadd", "--arg", "a"], "expected NAME=VALUE"),
    (["--kernel", "vadd", "--arg", "a=1", "--arg", "a=2", "--arg", "b=1", "--arg", "b=2",
      "--arg", "b=3", "--arg", "c=1", "--arg", "n=1"], "different numbers of times"),
    (["--kernel", "vadd", "--arg", "a=x", "--arg", "b=1", "--arg", "c=1", "--arg", "n=1"],
     "not an integer"),
    (["--kernel", "vadd", "--arg", "a=zeros:200", "--arg", "b=1", "--arg", "c=1",
      "--arg", "n=1"], "global memory"),
    (["--arg", "a=1"], "has 2 kernels"),
    (["--kernel", "nope"], "no __global__ function named 'nope'"),
    (["--kernel", "negate", "--arg", "u=-1"], "-1 does not fit uint32"),
    (["--kernel", "negate", "--engine", "model", "--grid", "2", "--block", "16",
      "--arg", "u=zeros:32"], "grid 2 x block 16 needs 8"),
    (["--kernel", "negate", "--engine", "model", "--check", "--grid", "2", "--block", "16",
      "--arg", "u=zeros:32"], "grid 2 x block 16 needs 8"),
    (["--kernel", "negate", "--engine", "transformers", "--arg", "u=1"],
     "--engine transformers needs --model DIR"),
    (["--kernel", "negate", "--engine", "transformers", "--forced", "--model", "/nonexistent",
      "--arg", "u=1"], "--forced checks on qgpu's engine"),
    (["--kernel", "negate", "--device", "cpu", "--arg", "u=1"],
     "--device applies to --engine transformers"),
    (["--kernel", "negate", "--engine", "transformers", "--model", "/nonexistent",
      "--arg", "u=1"], "/nonexistent does not exist")])
def test_errors_are_one_line_with_nonzero_status(cu, capsys, argv, match):
    rc, out, err = run(capsys, cu, "--grid", "1", "--block", "1", *argv)
    assert rc != 0 and out == ""
    assert match in err and err.count("\n") == 1 and err.startswith("qgpu run: error:")


def test_compile_error_reports_file_and_line(tmp_path, capsys):
    bad = tmp_path / "bad.cu"
    bad.write_text("__global__ void k(int *a) {\n  a[0] = x;\n}\n")
    rc, _, err = run(capsys, str(bad), "--grid", "1", "--block", "1", "--arg", "a=0")
    assert rc == 1 and f"{bad}:2:" in err


def test_missing_file(capsys):
    rc, _, err = run(capsys, "/nonexistent/k.cu", "--grid", "1", "--block", "1")
    assert rc == 1 and "cannot read" in err


@pytest.mark.slow
def test_installed_command_as_a_new_user(tmp_path):
    src = tmp_path / "saxpy.cu"
    src.write_text("""// y = a*x + y, then a warp-wide sum of y into out[0] (a CTA of 4 threads is
// one partial 32-lane warp: the mask names its threads, a lane adds only theirs)
__global__ void saxpy(int a, const int *x, int *y, int *out, int n) {
  unsigned m = __activemask(), lane = threadIdx.x & (warpSize - 1);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = 0;
  if (i < n) { y[i] = a * x[i] + y[i]; v = y[i]; }
  for (int o = warpSize / 2; o > 0; o /= 2) {
    int u = __shfl_down_sync(m, v, o);
    if (lane + o < blockDim.x) v += u;
  }
  if (lane == 0) atomicAdd(out, v);
}
""")
    qgpu = str(Path(sys.executable).parent / "qgpu")
    cmd = [qgpu, "run", str(src), "--grid", "2", "--block", "4", "--json", "--arg", "a=3",
           "--arg", "x=1,2,3,4,5,6,7", "--arg", "y=1,1,1,1,1,1,1", "--arg", "out=zeros:1",
           "--arg", "n=7"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    y = [3 * x + 1 for x in range(1, 8)]
    assert doc["args"]["y"] == y and doc["args"]["out"] == [sum(y)]


def test_an_arg_given_several_times_makes_several_launches(cu, capsys, machine):
    """--arg a given twice (b, c, n once): two launches, run as one list on the model, each
    reported; with --json one object per line."""
    argv = ["--grid", "1", "--block", "2", "--kernel", "vadd", "--arg", "a=1,2",
            "--arg", "a=10,20", "--arg", "b=3,4", "--arg", "c=zeros:2", "--arg", "n=2"]
    rc, out, _ = run(capsys, cu, *argv)
    assert rc == 0 and "launch 2 of 2" in out
    assert "after  [4, 6]" in out and "after  [13, 24]" in out
    rc, out, _ = run(capsys, cu, *argv, "--json")
    lines = [json.loads(line) for line in out.splitlines()]
    assert rc == 0 and [r["launch"] for r in lines] == [1, 2]
    assert [r["args"]["c"] for r in lines] == [[4, 6], [13, 24]]


def test_narrow_bool_and_long_long_arguments_from_the_command_line(tmp_path, capsys):
    path = tmp_path / "s.cu"
    path.write_text("__global__ void k(long long *x, char c, bool b, unsigned long long u) "
                    "{ x[threadIdx.x] += c * (b ? 2 : 3) + (long long)u; }\n")
    rc = main(["run", str(path), "--grid", "1", "--block", "2", "--engine", "interp",
               "--arg", "x=i64:-5,9000000000", "--arg", "c=-3", "--arg", "b=true",
               "--arg", "u=0x100000000", "--json"])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["args"]["x"] == [-5 - 6 + (1 << 32),
                                                                9000000000 - 6 + (1 << 32)]
    assert main(["run", str(path), "--grid", "1", "--block", "2", "--engine", "interp",
                 "--arg", "x=zeros:2", "--arg", "c=200", "--arg", "b=0",
                 "--arg", "u=0"]) == 1
    assert "c = 200 does not fit char" in capsys.readouterr().err


def test_float_scalars_and_arrays_from_the_command_line(tmp_path, capsys):
    """A tutorial's SAXPY takes `float a` by value: --arg a=2.5 as a C literal 2.5f."""
    path = tmp_path / "saxpy.cu"
    path.write_text("__global__ void saxpy(int n, float a, const float *x, float *y) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "  if (i < n) y[i] = a * x[i] + y[i];\n}\n")
    rc = main(["run", str(path), "--grid", "1", "--block", "4", "--engine", "interp",
               "--arg", "n=4", "--arg", "a=0.1", "--arg", "x=1,2,3,-inf",
               "--arg", "y=0.5,0.5,0.5,0.5", "--json"])
    assert rc == 0
    a, x, y = np.float32(0.1), np.array([1, 2, 3, -np.inf], np.float32), np.float32(0.5)
    want = [float(np.float32(float(a) * float(v) + float(y))) for v in x]  # fma: one rounding
    # --json writes a float that is not finite as a string (qgpu.files.json_dumps)
    assert json.loads(capsys.readouterr().out)["args"]["y"] == want[:3] + ["-inf"]
    assert main(["run", str(path), "--grid", "1", "--block", "4", "--engine", "interp",
                 "--arg", "n=4", "--arg", "a=two", "--arg", "x=zeros:4",
                 "--arg", "y=zeros:4"]) == 1
    assert "--arg a: 'two' is not a number (float parameter)" in capsys.readouterr().err
