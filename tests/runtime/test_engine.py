"""The model as a launch engine: CUDA source -> front end -> the compiled model, results
read from the model's state, `qgpu run --engine model --check`."""

import numpy as np
import pytest

import qgpu
from qgpu.cli import main
from qgpu.cuda.api import ENGINES

pytestmark = pytest.mark.slow

BUMP = """
__global__ void bump(int *out, int x) {
  if (threadIdx.x == 2) out[1] = x + 1;
}
"""


def test_cuda_kernel_on_the_model_engine():
    k = qgpu.compile(BUMP).get_function("bump")     # the API's default engine: the model
    out = np.array([5, 0], np.int32)
    res = k(1, 4, (out, 41))
    assert out.tolist() == [5, 42] and res.engine == "model"
    ref = k(1, 4, (np.array([5, 0], np.int32), 41), engine="interp")
    assert ref.engine == "interp"
    assert res.trace == ref.trace and res.blocks_executed == ref.blocks_executed
    assert {"model", "model-check"} <= set(ENGINES)


def test_cli_run_engine_model_check(tmp_path, capsys):
    f = tmp_path / "bump.cu"
    f.write_text(BUMP)
    rc = main(["run", str(f), "--grid", "1", "--block", "3", "--engine", "model", "--check",
               "--arg", "out=0,7", "--arg", "x=-5"])
    out = capsys.readouterr().out
    assert rc == 0 and "after  [0, -4]" in out and "engine model" in out
