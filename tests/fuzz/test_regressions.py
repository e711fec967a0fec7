"""Minimal kernels from fuzz-found failures, each checked against its C meaning.

- clang narrows a 32-bit load when only some of its bytes are used (`in[t] & 255` becomes
  `ld.global.u8`, `in[t] >> 16` becomes `ld.global.s16 [addr+2]`); the front end must
  accept byte and halfword loads at byte offsets of int arrays (fuzz seeds 1000134,
  1000504, 1001023, 1001160)."""

import numpy as np
import pytest

import qgpu

INPUT = np.array([0x12345678, -1, -0x7F0080FD, 3], np.int32)   # 0x80FF7F03 as int


def _run(body: str) -> list[int]:
    src = f"__global__ void k(const int* in, int* out) {{ int t = threadIdx.x; {body} }}"
    out = np.zeros(4, np.int32)
    qgpu.compile(src).get_function("k")(1, 4, [INPUT.copy(), out])
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
