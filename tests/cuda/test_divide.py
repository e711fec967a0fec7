"""cuda.divide: div/rem expansions against C semantics and against a real GPU."""

import numpy as np
import pytest

from qgpu.cuda.divide import rem_steps
from qgpu.isa import limits

from .helpers import i32, launch, u32

SRC = """
__global__ void divs(const int *a, const int *b, int *q, int *r, unsigned *uq, unsigned *ur,
                     int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    q[i] = a[i] / b[i]; r[i] = a[i] % b[i];
    uq[i] = (unsigned)a[i] / (unsigned)b[i]; ur[i] = (unsigned)a[i] % (unsigned)b[i];
  }
}
"""
INT_MIN = -(1 << 31)
# What an NVIDIA H200 computed for these operands (tests/cuda/device_divrem.py, PTX through
# the driver's JIT): (a, b) -> (a / b, a % b, (unsigned) a / b, (unsigned) a % b) as uint32.
GPU = {
    (7, 0): (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
    (-7, 0): (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
    (0, 0): (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
    (INT_MIN, 0): (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),
    (INT_MIN, -1): (0x80000000, 0, 0, 0x80000000),
}


def c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def run(pairs):
    n = len(pairs)
    a, b = i32([p[0] for p in pairs]), i32([p[1] for p in pairs])
    q, r, uq, ur = (np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(n, np.uint32),
                    np.zeros(n, np.uint32))
    launch(SRC, "divs", 1, n, a, b, q, r, uq, ur, n)
    return [tuple(int(x) & 0xFFFFFFFF for x in t) for t in zip(q, r, uq, ur, strict=True)]


def test_zero_divisors_and_overflow_match_the_gpu():
    pairs = list(GPU)
    assert run(pairs) == [GPU[p] for p in pairs]


@pytest.mark.parametrize("seed", range(3))
def test_random_operands_follow_c(seed):
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(16):
        bits_a, bits_b = rng.integers(1, 33, 2)
        a = int(rng.integers(-(1 << (bits_a - 1)), 1 << (bits_a - 1)))
        b = int(rng.integers(-(1 << (bits_b - 1)), 1 << (bits_b - 1))) or 3
        pairs.append((a, b))
    got = run(pairs)
    for (a, b), (q, r, uq, ur) in zip(pairs, got, strict=True):
        assert limits.s32(q) == c_div(a, b) and limits.s32(r) == a - b * c_div(a, b)
        assert uq == limits.u32(a) // limits.u32(b) and ur == limits.u32(a) % limits.u32(b)


ONE = """
__global__ void one(const unsigned *a, const unsigned *b, unsigned *q) {
  q[0] = a[0] OP b[0];
}
"""


@pytest.mark.parametrize("op", ["/", "%"])
def test_division_loop_runs_once_per_quotient_bit(op, monkeypatch):
    monkeypatch.setattr(limits, "SLOTS", 4)   # the wide loop (one block per iteration)
    bits_per_iteration = 1 if op == "/" else rem_steps()
    def blocks(x, y):
        res, _ = launch(ONE.replace("OP", op), "one", 1, 1, u32([x]), u32([y]),
                        np.zeros(1, np.uint32))
        return res.blocks_executed
    # restoring steps: 100 / 7 from bit 4 (5 steps), 0x7fffffff / 1 from bit 30 (31)
    iterations = [-(-steps // bits_per_iteration) for steps in (31, 5)]
    assert blocks(0x7FFFFFFF, 1) - blocks(100, 7) == iterations[0] - iterations[1]


def test_unsigned_extremes():
    assert run([(-1, -1), (-1, 1), (5, -1)])[0][2:] == (1, 0)
    assert run([(-1, 2)])[0][2:] == (0x7FFFFFFF, 1)
    assert u32([5]).dtype == np.uint32
