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


MEM_SRC = """#include <stdint.h>
__global__ void mix(const int *tag, long long *x, unsigned long long *u, long long k,
                    const int *small, int *out) {
  int i = threadIdx.x;
  long long v = x[i];
  x[i] = v * 3 + k;
  u[i] = (u[i] >> 1) ^ ((unsigned long long)small[i] << 40);
  long long s = small[i];                      // a 32-bit load widened (signed)
  out[i] = (int)(v >> 32) + (int)v + (int)(s >> 63) + tag[0];
}
__global__ void scalars(int *o, char c, signed char sc, unsigned char uc, short s,
                        unsigned short us, bool b, long long ll, uint64_t ull) {
  o[0] = c; o[1] = sc; o[2] = uc; o[3] = s; o[4] = us; o[5] = b; o[6] = c + s * uc;
  o[7] = (int)(ll >> 20); o[8] = (int)(ull >> 33); o[9] = ll < 0;
}
"""
M64 = (1 << 64) - 1


def test_long_long_arrays_and_parameters_are_exact_on_register_pairs():
    mod = qgpu.compile(MEM_SRC, "mem.cu", engine="interp")
    rng = np.random.default_rng(8)
    x = rng.integers(-(1 << 62), 1 << 62, 4, dtype=np.int64)
    x[0] = -(1 << 63)
    u = rng.integers(0, 1 << 63, 4, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    small = np.array([-5, 7, -(1 << 31), 12345], np.int32)
    tag, out = np.array([9], np.int32), np.zeros(4, np.int32)
    x0, u0, k = x.copy(), u.copy(), -(1 << 40) - 3
    res = mod.get_function("mix")(1, 4, [tag, x, u, k, small, out])
    assert res.layout["x"][0] % 2 == 0          # 8-byte elements start on an even word
    assert [int(v) for v in x] == [s64(int(v) * 3 + k) for v in x0]
    assert [int(v) for v in u] == [((int(v) >> 1) ^ ((int(s) & M64) << 40)) & M64
                                   for v, s in zip(u0, small, strict=True)]
    assert list(out) == [s32((int(v) >> 32) + (int(v) & M32) + (-1 if s < 0 else 0) + 9)
                         for v, s in zip(x0, small, strict=True)]


def s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def test_char_short_bool_and_long_long_scalars_by_value():
    k = qgpu.compile(MEM_SRC, "mem.cu", engine="interp").get_function("scalars")
    o = np.zeros(10, np.int32)
    k(1, 1, [o, -3, -128, 200, -300, 60000, True, -(1 << 50) - 1, (1 << 64) - 1])
    assert list(o) == [-3, -128, 200, -300, 60000, 1, -3 - 300 * 200,
                       s32((-(1 << 50) - 1) >> 20), (1 << 31) - 1, 1]
    for bad in ([o, 128, 0, 0, 0, 0, 0, 0, 0], [o, 0, 0, 256, 0, 0, 0, 0, 0],
                [o, 0, 0, 0, 0, -1, 0, 0, 0], [o, 0, 0, 0, 0, 0, 2, 0, 0],
                [o, 0, 0, 0, 0, 0, 0, 1 << 63, 0]):
        with pytest.raises(qgpu.errors.LaunchError, match="does not fit"):
            k(1, 1, bad)


def test_narrow_values_widened_to_64_bits_and_back():
    src = """__global__ void k(long long *x, const short *s, const unsigned char *u, short *o,
                           signed char *c) {
  int i = threadIdx.x;
  x[i] = (long long)s[i] * 3 + (long long)u[i] + x[i];
  o[i] = (short)(x[i] >> 3);
  c[i] = (signed char)x[i];
}"""
    k = qgpu.compile(src, "n.cu", engine="interp").get_function("k")
    x = np.array([1 << 40, -7, 123456789012, -(1 << 62)], np.int64)
    s = np.array([-32768, 5, -1, 32767], np.int16)
    u = np.array([255, 0, 128, 1], np.uint8)
    o, c = np.zeros(4, np.int16), np.zeros(4, np.int8)
    x0 = x.copy()
    k(1, 4, [x, s, u, o, c])
    want = [int(a) + int(b) * 3 + int(d) for a, b, d in zip(x0, s, u, strict=True)]
    assert [int(v) for v in x] == want
    assert list(o) == [((w >> 3) & 0xFFFF) - ((w >> 3) & 0x8000) * 2 for w in want]
    assert list(c) == [(w & 0xFF) - (w & 0x80) * 2 for w in want]
