"""cuda.float32: float kernels through the whole front end on the interpreter, bit for
bit against numpy float32 (and isa.f32's fma where clang contracts a * b + c), the
unordered comparisons and conversions, float atomicAdd, and the clear refusals of what
cannot be exact (.approx, double)."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import CompileError
from qgpu.isa import f32
from tests.cuda.helpers import launch

rng = np.random.default_rng(27)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4028235e38,
                    1.1754944e-38, 1.0, -1.0, 0.5, 2.5, -2.5, 3.5, 1e10, -1e10, 16777217.0],
                   np.float32)


def floats(n):
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)).astype(np.float32)
    k = min(n // 2, len(SPECIAL))
    x[:k] = SPECIAL[rng.permutation(len(SPECIAL))[:k]]
    rng.shuffle(x)
    return x


def u(x):
    return x.view(np.uint32)


def same(got, want):
    """Equal bit for bit; a NaN must be the GPU's canonical 0x7fffffff."""
    want = u(np.asarray(want, np.float32)).copy()
    want[np.isnan(np.asarray(want).view(np.float32))] = f32.NAN
    return got.tolist() == want.tolist()


ARITH = """
__global__ void k(unsigned *o, const unsigned *xi, const unsigned *yi) {
  const float *x = (const float *)xi, *y = (const float *)yi;
  float *f = (float *)o; int i = threadIdx.x;
  float a = x[i], b = y[i];
  f[i] = a + b; f[8 + i] = a - b; f[16 + i] = a / b; f[24 + i] = sqrtf(a);
  f[32 + i] = fminf(a, b); f[40 + i] = fmaxf(a, b); f[48 + i] = -fabsf(a);
}
"""


def test_arithmetic_against_numpy_float32():
    for _ in range(4):
        x, y = floats(8), floats(8)
        o = np.zeros(56, np.uint32)
        launch(ARITH, "k", 1, 8, o, u(x), u(y))
        with np.errstate(all="ignore"):
            assert same(o[0:8], x + y) and same(o[8:16], x - y)
            assert same(o[16:24], x / y) and same(o[24:32], np.sqrt(x))
            assert same(o[32:40], np.fmin(x, y)) and same(o[40:48], np.fmax(x, y))
            # abs/neg are sign-bit operations: a NaN keeps its payload (numpy's too)
            assert o[48:56].tolist() == u(-np.abs(x)).tolist()


def test_saxpy_is_one_fma():
    src = """__global__ void saxpy(unsigned *yi, const unsigned *xi, unsigned ab, int n) {
      float *y = (float *)yi; const float *x = (const float *)xi;
      float a = __uint_as_float(ab);
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i];
    }"""
    x, y, a = floats(16), floats(16), np.float32(-1.3)
    out = y.copy()
    launch(src, "saxpy", 4, 4, u(out), u(x), int(u(np.array([a]))[0]), 16)
    ab = int(u(np.array([a]))[0])
    want = [f32.fma(ab, int(xv), int(yv)) for xv, yv in zip(u(x), u(y), strict=True)]
    assert u(out).tolist() == want
    ptx = qgpu.compile(src, engine="interp").ptx
    assert "fma.rn.f32" in ptx


def test_comparisons_and_conversions():
    src = """__global__ void k(unsigned *o, const unsigned *xi, const unsigned *yi) {
      const float *x = (const float *)xi, *y = (const float *)yi;
      int i = threadIdx.x; float a = x[i], b = y[i];
      o[i] = (a < b) | (a <= b) << 1 | (a == b) << 2 | (a != b) << 3 | !(a >= b) << 4
             | !(a > b) << 5 | (a != a) << 6;
      o[8 + i] = (int)a; o[16 + i] = (unsigned)b;
      ((float *)o)[24 + i] = floorf(a) + ceilf(b);
      ((float *)o)[32 + i] = (float)(int)o[8 + i] + (float)(o[16 + i] * 2654435761u);
      ((float *)o)[40 + i] = rintf(a) - truncf(b);
    }"""
    x, y = floats(8), floats(8)
    y[3], y[4] = x[3], np.nan
    o = np.zeros(48, np.uint32)
    launch(src, "k", 1, 8, o, u(x), u(y))
    with np.errstate(all="ignore"):
        want = ((x < y) | (x <= y) << 1 | (x == y) << 2 | (x != y) << 3 | ~(x >= y) << 4
                | ~(x > y) << 5 | (x != x) << 6)
        assert o[:8].tolist() == want.astype(np.uint32).tolist()
        ints = [f32.to_int(int(v), True, "rz") for v in u(x)]
        uns = [f32.to_int(int(v), False, "rz") for v in u(y)]
        assert o[8:16].tolist() == ints and o[16:24].tolist() == uns
        assert same(o[24:32], np.floor(x) + np.ceil(y))
        conv = (np.array(ints, np.uint32).view(np.int32).astype(np.float32)
                + (np.array(uns, np.uint64) * 2654435761 % 2**32).astype(np.float32))
        assert same(o[32:40], conv)
        assert same(o[40:48], np.rint(x) - np.trunc(y))


def test_float_atomic_add_in_lane_order():
    src = """__global__ void dot(unsigned *o, const unsigned *xi, const unsigned *yi, int n) {
      const float *x = (const float *)xi, *y = (const float *)yi;
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) atomicAdd((float *)o, x[i] * y[i]);
    }"""
    x, y = floats(16), floats(16)
    x[np.isnan(x) | np.isinf(x)] = 1.0
    y[np.isnan(y) | np.isinf(y)] = 2.0
    o = np.zeros(1, np.uint32)
    launch(src, "dot", 4, 4, o, u(x), u(y), 16)
    acc = 0   # warps in order, lanes in order (the machine's atomics); PTX's rules (isa.f32:
    for a, b in zip(u(x).tolist(), u(y).tolist(), strict=True):  # inf - inf is 0x7FFFFFFF,
        acc = f32.add(acc, f32.mul(a, b))                        # not numpy's 0xFFC00000)
    assert o.tolist() == [acc]


@pytest.mark.parametrize("body,match", [
    ("o[0] = __float_as_uint(__expf(__uint_as_float(o[1])));", "approximate"),
    ("o[0] = __float_as_uint(__fdividef(__uint_as_float(o[1]), 3.0f));", "approximate"),
    ("o[0] = (unsigned)(__uint_as_float(o[1]) * 1.5);", "double"),
])
def test_inexact_forms_are_refused(body, match):
    src = "__device__ float __expf(float x) { return __nvvm_ex2_approx_f(x * 1.4426950f); }\n" \
          "__device__ float __fdividef(float a, float b) { return __nvvm_div_approx_f(a, b); }\n" \
          f"__global__ void k(unsigned *o) {{ {body} }}\n"
    with pytest.raises(CompileError, match=match):
        qgpu.compile(src, engine="interp").get_function("k")


def test_tutorial_saxpy_with_float_parameters():
    src = """__global__ void saxpy(int n, float a, const float *x, float *y) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i] + y[i];
    }"""
    x, y = floats(16), floats(16)
    out = y.copy()
    kernel = qgpu.compile(src, engine="interp").get_function("saxpy")
    kernel(4, 4, (16, np.float32(2.5), x, out))
    assert out.dtype == np.float32
    want = [f32.fma(0x40200000, int(a), int(b)) for a, b in zip(u(x), u(y), strict=True)]
    assert u(out).tolist() == want
