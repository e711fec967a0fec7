"""cuda.api: compile / get_function / launch, argument placement and copy-back, errors."""

import numpy as np
import pytest

import qgpu
from qgpu.cuda import ENGINES
from qgpu.errors import CompileError, LaunchError
from qgpu.isa import limits

from .helpers import i32, u32

VADD = """
__global__ void vadd(const int *a, const int *b, int *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void scale(unsigned *x, unsigned k) { x[threadIdx.x] *= k; }
"""


@pytest.fixture(scope="module")
def mod():
    return qgpu.compile(VADD, engine="interp")


def test_launch_copies_results_back(mod):
    a, b, c = i32([1, 2, 3, -4, 5]), i32([10, 20, 30, 40, 50]), np.zeros(5, np.int32)
    res = mod.get_function("vadd")(2, 3, [a, b, c, 5])
    assert list(c) == [11, 22, 33, 36, 55]
    assert list(a) == [1, 2, 3, -4, 5]
    assert res.tokens > 0 and res.blocks_executed > 0
    assert res.layout["a"] == (0, 5) and res.layout["b"] == (5, 5)


def test_grid_and_block_as_tuples_and_args_as_dict(mod):
    a, b, c = i32([1, 2]), i32([3, 4]), np.zeros(2, np.int32)
    mod.get_function("vadd")((1,), (2, 1, 1), {"a": a, "b": b, "c": c, "n": 2})
    assert list(c) == [4, 6]
    with pytest.raises(LaunchError, match=r"grid \(2,3\) x block \(32,33\) \(6 CTAs of "
                                          r"1056 threads\): block of 1056 threads"):
        mod.get_function("vadd")((2, 3), (32, 33), [a, b, c, 2])
    with pytest.raises(LaunchError, match="4 dimensions; a launch has 1 to 3"):
        mod.get_function("vadd")((1, 1, 1, 1), 2, [a, b, c, 2])


def test_unsigned_arrays_and_scalars(mod):
    x = u32([0xFFFFFFFF, 3, 0x80000000])
    mod.get_function("scale")(1, 3, [x, 3])
    assert list(x) == [0xFFFFFFFD, 9, 0x80000000]
    with pytest.raises(LaunchError, match="does not fit unsigned"):
        mod.get_function("scale")(1, 3, [x, -1])


def test_the_same_array_twice_is_placed_once(mod):
    a = i32([1, 2, 3])
    res = mod.get_function("vadd")(1, 3, [a, a, a, 3])
    assert list(a) == [2, 4, 6]
    assert res.layout["a"] == res.layout["c"] == (0, 3)


def test_oversize_arguments_are_a_launch_error(mod):
    big = np.zeros(8200, np.int32)
    with pytest.raises(LaunchError, match=r"need 16404 words .* the machine has 16384"):
        mod.get_function("vadd")(1, 4, [big, big.copy(), np.zeros(4, np.int32), 4])
    assert limits.GLOBAL_WORDS == 16384


def test_data_past_the_model_memory_links_into_the_isa_memory(mod):
    """100 + 100 + 4 words do not fit the model machine's 128: the launch is linked into
    the ISA's memory and runs on the interpreter; the model refuses it by name."""
    a, b = i32(range(100)), i32(range(100, 200))
    c = np.zeros(100, np.int32)
    res = mod.get_function("vadd")(1, 4, [a, b, c, 100])
    assert res.program.memory_sizes == limits.ISA_MEMORY and res.tokens is None
    small = mod.get_function("vadd")(1, 4, [a[:4], b[:4], c[:4], 4])
    assert small.program.memory_sizes == limits.MODEL_MEMORY and small.tokens > 0


@pytest.mark.parametrize("args,match", [
    ([i32([1]), i32([1])], "takes 4 arguments"),
    ([[1, 2], i32([1]), i32([1]), 1], "must be a numpy int32 or uint32 array"),
    ([np.zeros(2, np.float32), i32([1]), i32([1]), 1], "1-D int32 or uint32"),
    ([i32([1]), i32([1]), i32([1]), "3"], "must be an integer"),
    ([i32([1]), i32([1]), i32([1]), 1 << 31], "does not fit int")])
def test_bad_arguments(mod, args, match):
    with pytest.raises(LaunchError, match=match):
        mod.get_function("vadd")(1, 1, args)


def test_dict_arguments_must_match_the_names(mod):
    with pytest.raises(LaunchError, match="no parameter named"):
        mod.get_function("vadd")(1, 1, {"a": i32([1]), "zz": 1})
    with pytest.raises(LaunchError, match="missing argument"):
        mod.get_function("vadd")(1, 1, {"a": i32([1])})


def test_launch_limits_and_engines(mod):
    k = mod.get_function("vadd")
    args = [i32([1]), i32([1]), np.zeros(1, np.int32), 1]
    with pytest.raises(LaunchError, match="block of 1025 threads"):
        k(4, 1025, args)
    with pytest.raises(LaunchError, match="needs 8"):
        k(2, 16, [i32([1] * 32), i32([1] * 32), np.zeros(32, np.int32), 32], engine="model")
    with pytest.raises(LaunchError, match="unknown engine"):
        k(1, 1, args, engine="gpu")
    assert "interp" in ENGINES


def test_module_metadata(mod):
    assert mod.kernel_names == ["vadd", "scale"]
    k = mod.get_function("vadd")
    assert [p.name for p in k.params] == ["a", "b", "c", "n"]
    assert k.params[0].const and k.params[0].pointer and not k.params[3].pointer
    assert mod.get_function("vadd") is k
    assert k.template.stats["blocks"] == len(k.program.blocks) <= limits.ROM_BLOCKS


def test_device_and_constant_variables():
    src = """__device__ int counter = 5;
    __constant__ int table[3] = {7, 8, 9};
    __global__ void k(int *out) {
      int t = threadIdx.x;
      atomicAdd(&counter, t);
      out[t] = table[t] + counter * 0;
    }"""
    out = np.zeros(3, np.int32)
    res = qgpu.compile(src, engine="interp").get_function("k")(1, 3, [out])
    assert list(out) == [7, 8, 9]
    assert res.memory[3] == 5 + 0 + 1 + 2


def test_kernel_without_parameters_and_compile_error_type():
    k = qgpu.compile("__global__ void k() { }", engine="interp").get_function("k")
    assert k(1, 4, []).blocks_executed >= 1
    with pytest.raises(CompileError):
        qgpu.compile("__global__ void k( { }")


def test_default_engines():
    """qgpu.compile (the package's entry point) launches on the model unless told
    otherwise; the front end's own compile on the interpreter."""
    import qgpu.cuda

    src = "__global__ void k(int *o) { o[threadIdx.x] = 1; }"
    assert qgpu.compile(src).get_function("k").engine == "model"
    assert qgpu.compile(src, engine="interp").get_function("k").engine == "interp"
    assert qgpu.cuda.compile(src).get_function("k").engine == "interp"
    out = np.zeros(2, np.int32)
    res = qgpu.compile(src, engine="interp").get_function("k")(1, 2, [out])
    assert res.engine == "interp" and out.tolist() == [1, 1]
