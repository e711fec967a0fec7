"""validate.gpu, the parts that need no GPU: the source NVRTC sees, the extern "C"
fallback, and argument marshalling (scalars must be 32-bit numpy scalars)."""

import numpy as np
import pytest

from qgpu.suite import kernel_params
from qgpu.validate.gpu import extern_c_source, gpu_source, host_arguments

SRC = "__global__ void k(const int* a, unsigned m, int n, uint32_t* out) { }"


def test_gpu_source_keeps_the_kernel_and_adds_the_integer_types():
    text = gpu_source(SRC)
    assert text.endswith(SRC)
    assert "typedef int int32_t;" in text and "typedef unsigned int uint32_t;" in text


def test_extern_c_fallback_marks_only_the_entry():
    two = SRC + "\n__global__ void other(int* x) { }"
    changed = extern_c_source(two, "k")
    assert changed.startswith('extern "C" __global__ void k(')
    assert "\n__global__ void other(" in changed
    with pytest.raises(ValueError):
        extern_c_source(SRC, "missing")


def test_host_arguments_are_typed_32_bit_and_copied():
    params = kernel_params(SRC, "k")
    a = np.array([1, 2], np.int32)
    out = np.zeros(2, np.uint32)
    values = host_arguments(params, {"a": a, "m": 2**32 - 1, "n": -5, "out": out})
    assert values[0] is not a and np.array_equal(values[0], a)
    assert isinstance(values[1], np.uint32) and values[1] == 2**32 - 1
    assert isinstance(values[2], np.int32) and values[2] == -5
    assert values[3].dtype == np.uint32
    wrapped = host_arguments(params, {"a": a, "m": 0, "n": 2**31, "out": out})[2]
    assert wrapped == -2**31


def test_host_arguments_reject_other_array_types():
    params = kernel_params(SRC, "k")
    with pytest.raises(TypeError, match="int64"):
        host_arguments(params, {"a": np.zeros(2, np.int64), "m": 0, "n": 0,
                                "out": np.zeros(2, np.uint32)})


def test_host_arguments_take_float_and_narrow_arrays_and_float_scalars():
    src = ("__global__ void f(const float* x, unsigned char* m, bool* b, short* s, float a) "
           "{ }")
    params = kernel_params(src, "f")
    x = np.array([1.5, np.nan], np.float32)
    values = host_arguments(params, {"x": x, "m": np.zeros(2, np.uint8),
                                     "b": np.zeros(2, bool), "s": np.zeros(2, np.int16),
                                     "a": 0.1})
    assert values[0].dtype == np.float32 and values[0].tobytes() == x.tobytes()
    assert [v.dtype for v in values[1:4]] == [np.uint8, bool, np.int16]
    assert isinstance(values[4], np.float32) and values[4] == np.float32(0.1)
    assert "typedef unsigned char uint8_t;" in gpu_source(src)


def test_narrow_scalars_keep_their_width():
    src = "__global__ void g(short s, unsigned char c, bool b, int n) { }"
    values = host_arguments(kernel_params(src, "g"), {"s": -2, "c": 255, "b": 1, "n": 7})
    assert [type(v) for v in values] == [np.int16, np.uint8, np.bool_, np.int32]
    assert values[0] == -2 and values[1] == 255 and values[2]
