"""cuda.wide: the 64-bit forms clang introduces for 32-bit sources (closed forms of
loops) and 64-bit products, computed exactly on register pairs."""

import numpy as np
import pytest

import qgpu

SRC = """
__global__ void sum_to_n(int *out, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += i;
  out[threadIdx.x] = s;
}
__global__ void squares(unsigned *out, int n) {
  unsigned s = 0;
  for (int i = 0; i < n; i++) s += i * i;
  out[threadIdx.x] = s;
}
__global__ void products(const int *a, const int *b, int *out) {
  int i = threadIdx.x;
  long long p = (long long)a[i] * b[i];
  unsigned long long u = (unsigned long long)(unsigned)a[i] * (unsigned)b[i];
  out[4 * i] = (int)(p >> 20);
  out[4 * i + 1] = (int)(u >> 33);
  out[4 * i + 2] = p > 1000000000000LL;
  out[4 * i + 3] = (int)((p + u) >> 31) ^ (int)(p - (long long)u);
}
"""

M32 = (1 << 32) - 1


def s32(x):
    x &= M32
    return x - (1 << 32) if x >> 31 else x


@pytest.fixture(scope="module")
def mod():
    return qgpu.compile(SRC, "wide.cu", engine="interp")


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 1000, 65537, 100003])
def test_closed_forms_of_loops(mod, n):
    out = np.zeros(2, np.int32)
    mod.get_function("sum_to_n")(1, 2, [out, n])
    assert list(out) == [s32(sum(range(n)))] * 2
    u = np.zeros(2, np.uint32)
    mod.get_function("squares")(1, 2, [u, n])
    assert list(u) == [sum(i * i for i in range(n)) & M32] * 2


def test_64_bit_products_shifts_and_compares(mod):
    rng = np.random.default_rng(64)
    a = rng.integers(-(1 << 31), 1 << 31, 4, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(1 << 31), 1 << 31, 4, dtype=np.int64).astype(np.int32)
    a[0], b[0] = -(1 << 31), -(1 << 31)
    out = np.zeros(16, np.int32)
    mod.get_function("products")(1, 4, [a, b, out])
    want = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        p, u = x * y, (x & M32) * (y & M32)
        m64 = (1 << 64) - 1
        want += [s32(p >> 20), s32(u >> 33), int(p > 10**12),
                 s32((((p + u) & m64) >> 31) if (p + u) & m64 < 1 << 63 else
                     (((p + u) & m64) - (1 << 64)) >> 31) ^ s32(p - u)]
    assert list(out) == want
