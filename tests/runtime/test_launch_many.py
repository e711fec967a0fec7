"""The launch API's many-launch call (cuda.many.launch_many, Kernel.launch_many,
qgpu.launch_many) on the model: each launch's arrays and trace are what its own call
gives; errors raised (first failed launch, after all ran) or returned in place; the
suite's table on the model goes through it (one batch) with the same rows as launch by
launch."""

from dataclasses import replace

import numpy as np
import pytest

import qgpu
import qgpu.runtime  # noqa: F401 - registers the model's engines
from qgpu import suite
from qgpu.errors import LaunchError, QgpuError

SOURCE = """
__global__ void vadd(const int *a, const int *b, int *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}"""


@pytest.fixture(scope="module")
def kernel():
    from qgpu.runtime.compiled import load_machine

    load_machine(progress=False)
    return qgpu.compile(SOURCE).get_function("vadd")


def arg_sets():
    return [(np.arange(n, dtype=np.int32), 10 * np.arange(n, dtype=np.int32),
             np.zeros(n, np.int32), n) for n in (2, 3, 4)]


def test_launch_many_equals_each_call(kernel):
    sets, alone = arg_sets(), arg_sets()
    results = kernel.launch_many(1, 4, sets)
    calls = [kernel(1, 4, args) for args in alone]
    for got, want, a, b in zip(results, calls, sets, alone, strict=True):
        assert got.trace == want.trace and got.memory == want.memory
        assert a[2].tolist() == b[2].tolist() == (11 * np.arange(a[3])).tolist()
    assert results[0].engine == "model" and results[0].seconds > 0


def test_errors_raised_after_all_ran_or_returned(kernel):
    sets = arg_sets()
    launches = [(kernel, 1, 4, sets[0]), (kernel, 2, 16, sets[1]), (kernel, 1, 4, sets[2]),
                (kernel, 1, 4, (1, 2, 3, 4))]  # the model refuses 8 warps; not an array
    out = qgpu.launch_many(launches, errors="return")
    assert isinstance(out[1], LaunchError) and "needs 8" in str(out[1])
    assert isinstance(out[3], LaunchError) and "numpy" in str(out[3])
    assert not isinstance(out[0], QgpuError) and not isinstance(out[2], QgpuError)
    sets = arg_sets()  # the second launch (2 CTAs) runs past a budget of 6 blocks
    with pytest.raises(QgpuError, match="budget"):
        qgpu.launch_many([(kernel, 1, 4, sets[0]), (kernel, 2, 4, sets[1]),
                          (kernel, 1, 4, sets[2])], budget=6)
    assert sets[0][2].tolist() == [0, 11] and sets[2][2].tolist() == [0, 11, 22, 33]
    with pytest.raises(LaunchError, match="needs 8"):  # refused: before anything runs
        kernel.launch_many(2, 16, arg_sets())
    with pytest.raises(LaunchError, match="errors="):
        kernel.launch_many(1, 4, arg_sets(), errors="ignore")


def test_suite_table_on_the_model_is_one_batch_with_the_same_rows():
    """model-check rows (one launch_many call): every trace token compared with the
    interpreter's by the check, outputs with the oracle; tokens as the interpreter's."""
    spec = suite.load_kernel(suite.KERNELS_DIR / "dot.py")
    specs = [replace(spec, launches=spec.launches[:2])]
    batched = suite.suite_table(specs, "model-check")
    assert [r["ok"] for r in batched] == [True, True]
    assert [r["tokens"] for r in batched] == [r["tokens"] for r in
                                             suite.suite_table(specs, "interp")]
