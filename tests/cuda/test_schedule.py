"""cuda.schedule: stages, slots, machine-block splitting, special-register re-reads and the
ISA's reads-before-writes rule."""

import numpy as np

import qgpu
from qgpu.isa import OPS, limits

from .helpers import i32, launch

LONG = """
__global__ void chain(int *a) {
  int t = threadIdx.x;
  int x = a[t];
""" + "".join(f"  x = x * {k + 3} + (x >> {k % 5 + 1}) + t;\n" for k in range(12)) + """
  a[t] = x;
}
"""


def model(x, t):
    for k in range(12):
        x = limits.s32(limits.s32(x * (k + 3)) + (limits.s32(x) >> (k % 5 + 1)) + t)
    return x


def test_long_straight_line_code_splits_into_blocks_within_limits():
    a = i32(range(-3, 5))
    expect = [model(int(x), t) for t, x in enumerate(a)]
    res, k = launch(LONG, "chain", 1, 8, a)
    assert list(a) == expect
    prog = k.program
    assert len(prog.blocks) >= 4
    for b in prog.blocks:
        assert len(b.stages) <= limits.STAGES
        assert all(1 <= len(st) <= limits.SLOTS for st in b.stages)


def test_blocks_are_packed_with_parallel_operations(monkeypatch):
    monkeypatch.setattr(limits, "SLOTS", 4)   # a VLIW machine: several operations per stage
    src = """__global__ void k(int *a, int *b) {
      int t = threadIdx.x;
      b[t] = (a[t] + 1) * (a[t + 4] - 2) + (a[t + 8] ^ 3) * (a[t + 12] | 4);
    }"""
    k = qgpu.compile(src, engine="interp").get_function("k")
    widths = [len(st) for b in k.program.blocks for st in b.stages]
    assert max(widths) == limits.SLOTS
    assert len(k.program.blocks) <= 2


def test_memory_reads_come_before_writes_in_every_block():
    src = """__global__ void k(int *a) {
      int t = threadIdx.x;
      a[t] = a[t] + 1;
      a[t + 4] = a[t] * 2;
      atomicAdd(&a[8], a[t + 4]);
      a[t + 12] = atomicAdd(&a[9], 1);
    }"""
    a = np.zeros(16, np.int32)
    a[:4] = [1, 2, 3, 4]
    res, k = launch(src, "k", 1, 4, a)
    assert list(a[:8]) == [2, 3, 4, 5, 4, 6, 8, 10]
    assert a[8] == 28 and a[9] == 4 and sorted(a[12:16]) == [0, 1, 2, 3]
    for b in k.program.blocks:
        wrote = False
        for st in b.stages:
            for ins in st:
                kind = OPS[ins.op].kind
                assert not (wrote and kind in ("load", "atomic"))
                wrote = wrote or kind in ("store", "atomic")


def test_special_registers_are_reread_not_carried():
    res, k = launch(LONG, "chain", 1, 4, i32([1, 2, 3, 4]))
    tid_blocks = [bi for bi, b in enumerate(k.program.blocks)
                  if any(ins.op == "tid" for st in b.stages for ins in st)]
    assert len(tid_blocks) >= 2
    assert all(len(b.writeback) <= 2 for b in k.program.blocks)
