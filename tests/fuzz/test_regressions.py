"""Minimal kernels from fuzz-found failures, each checked against its C meaning.

- clang narrows a 32-bit load when only some of its bytes are used (`in[t] & 255` becomes
  `ld.global.u8`, `in[t] >> 16` becomes `ld.global.s16 [addr+2]`); the front end must
  accept byte and halfword loads at byte offsets of int arrays (fuzz seeds 1000134,
  1000504, 1001023, 1001160).
- a predicate set to the constant true (`mov.pred %p, -1`, which clang emits for a
  boolean phi) must read as 1 when selp turns it into an int, not as -1 (fuzz seed
  1001706)."""

import numpy as np
import pytest

import qgpu

INPUT = np.array([0x12345678, -1, -0x7F0080FD, 3], np.int32)   # 0x80FF7F03 as int


def _run(body: str) -> list[int]:
    src = f"__global__ void k(const int* in, int* out) {{ int t = threadIdx.x; {body} }}"
    out = np.zeros(4, np.int32)
    qgpu.compile(src, engine="interp").get_function("k")(1, 4, [INPUT.copy(), out])
    return out.tolist()


def _c(values, fn):
    return [int(np.array(fn(int(v)) & 0xFFFFFFFF, np.uint32).view(np.int32)) for v in values]


NARROWED_LOADS = {
    "out[t] = in[t] & 255;": lambda v: v & 255,
    "out[t] = (unsigned)in[t] >> 24;": lambda v: (v & 0xFFFFFFFF) >> 24,
    "out[t] = in[t] >> 16;": lambda v: v >> 16,
    "out[t] = (short)in[t];": lambda v: ((v & 0xFFFF) ^ 0x8000) - 0x8000,
    "out[t] = ((unsigned)in[t] & 255u) == 3u;": lambda v: int(v & 255 == 3),
}


@pytest.mark.parametrize("body", list(NARROWED_LOADS))
def test_loads_that_clang_narrows_to_bytes_or_halfwords(body):
    assert _run(body) == _c(INPUT, NARROWED_LOADS[body])


PREDICATE_TRUE_SRC = r"""
__device__ int q_sdiv(int a, int b) {
  return (b == 0 || (a == (-2147483647 - 1) && b == -1)) ? a : a / b;
}
__global__ void k(const int* in, int* out) {
  int t = threadIdx.x;
  int a = in[3 * t];
  unsigned c = in[3 * t + 1], d = in[3 * t + 2];
  out[t] = t ? (int)(d ? (int)(!c) : (int)((a && (c >> t)))) : q_sdiv(1, t);
}
"""


def test_constant_true_predicate_reads_as_one():
    # thread 0: q_sdiv(1, 0) = 1 (guarded); 1: d != 0, c == 0 -> !c = 1; 2: d == 0,
    # a && (8 >> 2) = 1; 3: d == 0, a == 0 -> 0
    inputs = np.array([-2, 9, 5, 1, 0, 5, 1, 8, 0, 0, 8, 0], np.int32)
    module = qgpu.compile(PREDICATE_TRUE_SRC, engine="interp")
    assert "mov.pred" in module.ptx          # the PTX shape this test is about
    out = np.zeros(4, np.int32)
    module.get_function("k")(1, 4, [inputs, out])
    assert out.tolist() == [1, 1, 1, 0]
