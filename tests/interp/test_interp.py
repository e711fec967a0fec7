"""The reference interpreter: every native operation through the machine, SIMT
divergence and reconvergence, barriers, atomics, shuffles, votes, and every fault."""

import pytest

from qgpu.errors import LaunchError, MachineError
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.isa.ops import OPS


@pytest.fixture(autouse=True)
def vliw_machine(monkeypatch):
    """These tests exercise the general stage semantics (several independent operations
    per stage), which the interpreter and validator implement for any SLOTS; the ISA's
    SLOTS is what the circuit computes today, so the tests widen it."""
    monkeypatch.setattr(limits, "SLOTS", 4)


def run(text, grid=1, block=4, mem=(), **kw):
    return run_launch(assemble(text.replace("\\\n", "")), grid, block, list(mem), **kw)


def s32s(words):
    return [limits.s32(w) for w in words]


def test_every_alu_op_runs_per_lane():
    # lanes get a = tid*0x40000001 + 5, b = tid + 30; each op's result is stored.
    alu = [m for m, o in OPS.items() if o.kind == "alu" and o.n_srcs == 2]
    for op in alu:
        res = run(f"""
block 0:
  tid r1
  mul r2, r1, 0x40000001 ; add r3, r1, 30 ; shl r4, r1, 2
  add r2, r2, 5
  jmp 1
block 1:
  {op} r5, r2, r3
  st.global [r4], r5
  exit
""")
        for lane in range(4):
            a, b = limits.u32(lane * 0x40000001 + 5), lane + 30
            assert res.memory[lane] == OPS[op].fn(a, b), (op, lane)


def test_special_registers_multi_cta():
    res = run("""
block 0:
  tid r1 ; ctaid r2 ; ntid r3 ; laneid r5
  mul r10, r5, 100 ; warpid r6 ; nctaid r4 ; mul r7, r2, r3
  add r8, r7, r1 ; add r11, r10, r6 ; mul r13, r4, 1000
  shl r9, r8, 2 ; add r12, r11, r13
  jmp 1
block 1:
  st.global [r9], r12
  exit
""", grid=2, block=6)
    got = res.memory[:12]
    want = []
    for _cta in range(2):
        for t in range(6):
            want.append(2000 + (t % 4) * 100 + t // 4)
    assert got == want


def test_stage_semantics_read_old_values():
    res = run("""
block 0:
  mov r1, 1 ; mov r2, 2
  mov r1, r2 ; mov r2, r1
  st.global [0], r1 ; st.global [4], r2
  exit
""", block=1)
    assert res.memory[:2] == [2, 1]       # a swap: both read the stage's old values


def test_block_local_registers_revert():
    res = run("""
block 0:
  mov r1, 5 ; mov r2, 6
  .writeback r1
  jmp 1
block 1:
  add r3, r1, r2
  st.global [0], r3
  exit
""", block=1)
    assert res.memory[0] == 5             # r2 was not written back: it reads 0 again


def test_divergent_if_else_reconverges():
    res = run("""
block 0:
  tid r1
  and r2, r1, 1
  br r2, 2, 1
block 1:
  mov r3, 100
  jmp 3
block 2:
  mov r3, 200
  jmp 3
block 3:
  shl r4, r1, 2 ; ballot r5, 1
  add r6, r3, r5
  st.global [r4], r6
  exit
""")
    assert res.memory[:4] == [115, 215, 115, 215]   # ballot sees all 4 lanes reconverged
    assert [e.block for e in res.events] == [0, 1, 2, 3]
    assert [e.active for e in res.events] == [(0, 1, 2, 3), (0, 2), (1, 3), (0, 1, 2, 3)]
    assert res.events[0].branch_taken == (1, 3)


def test_divergence_inside_loop():
    # each lane loops tid+1 times, summing i; early leavers wait at the exit block.
    res = run("""
block 0:
  tid r1 ; mov r2, 0 ; mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2 ; add r2, r2, 1
  setle.u r4, r2, r1
  br r4, 1, 2
block 2:
  shl r5, r1, 2 ; ballot r6, 1
  st.global [r5], r3 ; st.global [r5+16], r6
  exit
""")
    assert res.memory[:4] == [0, 1, 3, 6]
    assert res.memory[4:8] == [15, 15, 15, 15]
    assert [e.active for e in res.events if e.block == 1] == [
        (0, 1, 2, 3), (1, 2, 3), (2, 3), (3,)]


def test_barrier_across_warps_and_shared_memory():
    # 8 threads: each writes tid into shared, barrier, then reads its neighbour's slot.
    res = run("""
block 0:
  tid r1
  shl r2, r1, 2
  st.shared [r2], r1
  bar 1
block 1:
  tid r1
  add r3, r1, 1
  and r3, r3, 7
  shl r4, r3, 2 ; shl r5, r1, 2
  jmp 2
block 2:
  ld.shared r6, [r4]
  st.global [r5], r6
  exit
""", block=8)
    assert res.memory[:8] == [1, 2, 3, 4, 5, 6, 7, 0]
    assert [(e.warp, e.block) for e in res.events] == [(0, 0), (1, 0), (0, 1), (0, 2),
                                                       (1, 1), (1, 2)]


def test_shared_memory_is_per_cta():
    res = run("""
block 0:
  ctaid r1 ; tid r2
  add r1, r1, 10 ; shl r3, r2, 2 ; shl r5, r1, 4
  st.shared [r3], r1 ; add r7, r5, r3
  jmp 1
block 1:
  ld.shared r6, [r3]
  st.global [r7], r6
  exit
""", grid=2, block=4)
    assert res.memory[:8] == [10] * 4 + [11] * 4
    assert res.shared[0][:4] == [10] * 4 and res.shared[1][:4] == [11] * 4


def test_atomics_from_all_lanes_on_one_address():
    res = run("""
block 0:
  tid r1
  add r2, r1, 1 ; shl r3, r1, 2
  atom.global.add r4, [60], r2
  jmp 1
block 1:
  st.global [r3], r4
  exit
""", mem=[0] * 15 + [100])
    assert res.memory[:4] == [100, 101, 103, 106]    # lanes in ascending order
    assert res.memory[15] == 110
    assert res.events[0].mem_writes == [(("global", 0, 15), 110)]
    assert res.events[1].mem_writes == [(("global", 0, w), v)
                                        for w, v in enumerate([100, 101, 103, 106])]


@pytest.mark.parametrize("op, init, expect", [
    ("min.s", 5, limits.u32(-3)), ("min.u", 5, 0), ("max.s", 5, 5), ("max.u", 5, limits.u32(-3)),
    ("and", 0xFF, 0), ("or", 0, 0xFFFFFFFF), ("xor", 0, limits.u32(-3) ^ 0 ^ 1 ^ 2 ^ 3),
    ("exch", 9, 3),
])
def test_atomic_kinds(op, init, expect):
    # lane values: -3, 0 (lane 1 via mov), ... computed as lane 0: -3, others: tid
    res = run(f"""
block 0:
  tid r1
  seteq r2, r1, 0
  selp r3, -3, r1, r2
  atom.global.{op} r4, [0], r3
  exit
""", mem=[init])
    vals = [limits.u32(-3), 1, 2, 3]
    want = init
    for v in vals:
        want = {"min.s": lambda a, b: limits.u32(min(limits.s32(a), limits.s32(b))),
                "min.u": min, "max.s": lambda a, b: limits.u32(max(limits.s32(a), limits.s32(b))),
                "max.u": max, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
                "xor": lambda a, b: a ^ b, "exch": lambda a, b: b}[op](want, v)
    assert res.memory[0] == want


def test_cas_lock_free_increment_in_shared():
    res = run("""
block 0:
  tid r1
  atom.shared.cas r2, [0], 0, 7
  jmp 1
block 1:
  ld.shared r3, [0]
  st.global [0], r2 ; st.global [4], r3
  exit
""")
    assert res.memory[:2] == [7, 7]   # lanes 1..3 saw 7 (lane 0 swapped 0 -> 7)


def test_shuffles_across_the_width_boundary():
    # width 2: segmask = 32-2 = 30 -> c = (30 << 8) | 31 for down/bfly/idx, (30<<8) for up
    res = run("""
block 0:
  tid r1
  mul r2, r1, 10 ; shl r9, r1, 2
  shfl.down r3, r2, 1, 0x1e1f ; shfl.up r4, r2, 1, 0x1e00 ; \
    shfl.bfly r5, r2, 1, 0x1c1f ; shfl.idx r6, r2, 1, 0x1e1f
  shfl.down r7, r2, 2, 0x1f ; shfl.idx r8, r2, 3, 0x1f
  jmp 1
block 1:
  st.global [r9], r3 ; st.global [r9+16], r4 ; st.global [r9+32], r5
  jmp 2
block 2:
  st.global [r9+48], r6 ; st.global [r9+64], r7 ; st.global [r9+80], r8
  exit
""")
    m = res.memory
    assert m[0:4] == [10, 10, 30, 30]      # down 1 within pairs: lane 1, 3 keep their own
    assert m[4:8] == [0, 0, 20, 20]        # up 1 within pairs
    assert m[8:12] == [10, 0, 30, 20]      # xor 1
    assert m[12:16] == [10, 10, 30, 30]    # idx 1 of each pair
    assert m[16:20] == [20, 30, 20, 30]    # width 32 (segmask 0): lanes 2,3 + 2 leave warp
    assert m[20:24] == [30, 30, 30, 30]


def test_shuffle_from_an_inactive_lane_gives_the_lanes_own_value():
    # lanes 0, 1 take block 1; lanes 2, 3 hold r2 = 100 + 10 * lane but are inactive there.
    # PTX leaves reading an inactive lane undefined; the ISA gives the reading lane its own a.
    res = run("""
block 0:
  tid r1
  mul r2, r1, 10 ; shl r9, r1, 2
  add r2, r2, 100
  setlt.u r3, r1, 2
  br r3, 1, 2
block 1:
  add r2, r2, 1
  shfl.down r4, r2, 2, 0x1f ; shfl.down r5, r2, 1, 0x1f ; shfl.idx r6, r2, 3, 0x1f
  shfl.bfly r7, r2, 1, 0x1f
  st.global [r9], r4 ; st.global [r9+16], r5 ; st.global [r9+32], r6
  jmp 3
block 2:
  exit
block 3:
  st.global [r9+48], r7
  exit
""")
    m = res.memory
    assert m[0:2] == [101, 111]          # sources 2, 3 inactive: own (updated) values
    assert m[4:6] == [111, 111]          # lane 0 reads lane 1; lane 1's source 2 is inactive
    assert m[8:10] == [101, 111]         # idx 3: inactive for both
    assert m[12:14] == [111, 101]        # xor 1 stays among the active lanes


def test_shuffle_in_a_partial_warp_does_not_read_absent_lanes():
    res = run("""
block 0:
  tid r1
  add r2, r1, 7 ; shl r9, r1, 2
  shfl.down r3, r2, 1, 0x1f
  st.global [r9], r3
  exit
""", block=3)
    assert res.memory[:3] == [8, 9, 9]   # lane 2's source, lane 3, does not exist


def test_ballot_counts_active_lanes_only():
    res = run("""
block 0:
  tid r1
  setge.u r2, r1, 1
  br r2, 1, 2
block 1:
  ballot r3, 1
  st.global [0], r3
  exit
block 2:
  exit
""")
    assert res.memory[0] == 0b1110


def test_partial_warp_lanes_are_absent():
    res = run("""
block 0:
  ballot r1, 1 ; tid r2
  shl r3, r2, 2
  st.global [r3], r1
  exit
""", block=6)
    assert res.memory[:6] == [15, 15, 15, 15, 3, 3]


def test_runaway_loop_hits_the_budget():
    with pytest.raises(MachineError, match="budget exceeded: 50 blocks"):
        run("block 0:\n  jmp 0", budget=50)


@pytest.mark.parametrize("addr, message", [
    ("[2]", "misaligned global access at byte address 2"),
    ("[512]", "out-of-bounds global access at byte address 512"),
    ("[r0-4]", "out-of-bounds"),
])
def test_memory_faults(addr, message):
    with pytest.raises(MachineError, match=message):
        run(f"block 0:\n  ld.global r1, {addr}\n  exit", block=1)


def test_shared_bounds():
    with pytest.raises(MachineError, match="shared memory has 32 words"):
        run("block 0:\n  st.shared [128], r1\n  exit", block=1)


def test_isa_sized_bounds():
    """A hand-written program takes the model machine's memory (its traces are the
    model's); given the ISA's sizes, it has the ISA's bounds."""
    with pytest.raises(MachineError, match="shared memory has 12288 words"):
        run("block 0:\n  st.shared [49152], r1\n  exit", block=1, sizes=limits.ISA_MEMORY)
    with pytest.raises(MachineError, match="global memory has 16384 words"):
        run("block 0:\n  ld.global r1, [65536]\n  exit", block=1, sizes=limits.ISA_MEMORY)
    res = run("block 0:\n  mov r1, 7\n  st.global [4096], r1\n  exit", block=1,
              sizes=limits.ISA_MEMORY)
    assert res.memory[1024] == 7 and len(res.memory) == limits.GLOBAL_WORDS


def test_divergent_barrier_is_a_fault():
    with pytest.raises(MachineError, match="barrier cannot complete"):
        run("""
block 0:
  tid r1
  and r2, r1, 1
  br r2, 1, 2
block 1:
  bar 3
block 2:
  bar 3
block 3:
  exit
""".replace("block 2:\n  bar 3", "block 2:\n  bar 0"))


@pytest.mark.parametrize("grid, block, message", [
    (0, 4, "grid of 0"), (1, 0, "block of 0"), (1, 1025, "block of 1025"),
    (limits.MAX_CTAS + 1, 1, "grid of 16777217"),
])
def test_launch_limits(grid, block, message):
    with pytest.raises(LaunchError, match=message):
        run("block 0:\n  exit", grid=grid, block=block)


def test_memory_too_large():
    with pytest.raises(LaunchError, match="129 words"):
        run("block 0:\n  exit", mem=[0] * 129)
