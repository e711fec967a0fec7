"""cuda.warp: CUDA's 32-lane warp on the machine's 4-lane warps.

A CUDA warp is a group of eight machine warps: threads 32g..32g+31 of the CTA, CUDA lane
`tid & 31` (`%laneid`), warp `tid >> 5` (`%warpid`). Warp operations whose lanes may
leave the machine warp go through the kernel's warp scratch in shared memory (one word
per thread, and one vote word per group; cuda.link places it after the kernel's shared
memory) and the group barrier (`bar.group`: every non-exited lane of the group
waits there):

  * `shfl.sync` (`__shfl*_sync`, any offset, width, mask): store the own value in
    scratch[tid]; group barrier; the source lane j by PTX's rules (clamp and segment
    mask from the packed operand c); read scratch[tid - lane + j] when j is in range, its
    bit of the member mask is set and the thread exists, else the own value; group
    barrier (the scratch is reused by the next operation). A source lane in the mask
    that has exited leaves the value it stored last (CUDA leaves that case undefined).
    Where the shuffle provably stays inside 4 aligned lanes (width <= 4, or a
    `__shfl_xor_sync` mask below 4) the native 4-lane `shfl` computes the same, cheaper.
  * `vote.sync` ballot/any/all/uni and `activemask` (`__ballot_sync`, `__any_sync`,
    `__all_sync`, `__activemask`): the machine warp's native ballot, shifted to its place
    in the 32 lanes, ORed atomically into the group's vote word; group barrier; the word
    read; group barrier; the bits cleared again atomically (a machine warp that exits
    leaves no stale bits). Lanes that have exited take no part, as on a GPU.
  * `match.sync` any/all (`__match_any_sync`, `__match_all_sync`): the own value in
    scratch[tid]; group barrier; a loop over the warp's existing lanes comparing their
    words with the own (the lanes named by the member mask); group barrier.
  * `bar.warp.sync` (`__syncwarp`): the group barrier.

A warp operation is a group barrier, so all the group's non-exited threads must reach it
(a full mask, as most CUDA code passes): threads of one group waiting at different
barriers are a fault naming the blocks, never a wrong answer.
"""

from __future__ import annotations

from qgpu.cuda.ir import Barrier, CondBr, Goto, Sym
from qgpu.cuda.ptx import fail
from qgpu.isa import Imm
from qgpu.isa.limits import LANES
from qgpu.isa.program import GROUP_THREADS

WARP_SIZE = GROUP_THREADS
FULL = 0xFFFFFFFF
SCRATCH, VOTES = 1, 2     # Function.warp_scratch: a word per thread; and the vote words


def group_barrier(lw) -> None:
    """End the current block with the group barrier and continue in a new one."""
    nxt = lw.b.new_block("warpbar")
    lw.b.finish(Barrier(nxt.name, "group"))
    lw.b.start(nxt)


def native_shuffle(mode: str, lane, packed) -> bool:
    """Whether a shuffle stays inside 4 aligned lanes, where the machine's own 4-lane
    shuffle computes what CUDA's 32-lane one does: up, down and idx of width <= 4 (the
    segment mask covers lane bits 2-4, so the source is in the own 4 lanes or out of
    range); xor with a constant mask below 4 of width <= 4, or with the full clamp in
    segments of 4 lanes or more. (An xor mask of 4 or more reaches an earlier segment,
    as PTX defines it, whatever the width.)"""
    if not isinstance(packed, Imm):
        return False
    seg, high = (packed.value >> 8) & 31, 31 & ~(LANES - 1)
    if mode != "bfly":
        return seg & high == high
    return isinstance(lane, Imm) and lane.value & 31 < LANES and (
        seg & high == high or packed.value & 31 == 31 and seg & (LANES - 1) == 0)


def _word(lw, index, sym: str):
    """The byte address of word `index` of the warp scratch region `sym`."""
    b = lw.b
    four, addr = b.tmp(), b.tmp()
    b.emit("shl", four, index, Imm(2))
    b.emit("add", addr, four, Sym(sym))
    return addr


def shuffle(lw, ins, mode: str, d, a, lane, packed, mask) -> None:
    """d = PTX shfl.sync.{mode} of a across the 32-lane warp (through the scratch)."""
    b = lw.b
    lw.fn.warp_scratch = max(lw.fn.warp_scratch, SCRATCH)
    tid = b.tmp()
    b.emit("tid", tid)
    b.emit("st.shared", None, _word(lw, tid, "warp_scratch"), a)
    group_barrier(lw)
    me, base = b.tmp(), b.tmp()
    b.emit("and", me, tid, Imm(WARP_SIZE - 1))
    b.emit("sub", base, tid, me)
    j, ok = _source(lw, ins, mode, me, lane, packed)
    if not (isinstance(mask, Imm) and mask.value == FULL):
        bit, inmask, ok2 = b.tmp(), b.tmp(), b.tmp()
        b.emit("shr.u", bit, mask, j)
        b.emit("and", inmask, bit, Imm(1))
        b.emit("and", ok2, ok, inmask)
        ok = ok2
    src, exists, ok3, pick = b.tmp(), b.tmp(), b.tmp(), b.tmp()
    b.emit("add", src, base, j)
    b.emit("setlt.u", exists, src, Sym("warp_threads"))
    b.emit("and", ok3, ok, exists)
    b.emit("selp", pick, src, tid, ok3)
    b.emit("ld.shared", d, _word(lw, pick, "warp_scratch"))
    group_barrier(lw)


def _source(lw, ins, mode: str, me, lane, packed):
    """(j, ok): the source lane PTX's shfl.sync reads and whether it is in range."""
    b = lw.b
    if isinstance(packed, Imm):
        cval, seg = packed.value & 31, (packed.value >> 8) & 31
        if seg == 0:
            max_lane, min_lane = Imm(cval), Imm(0)
        else:
            min_lane, max_lane = b.tmp(), b.tmp()
            b.emit("and", min_lane, me, Imm(seg))
            b.emit("or", max_lane, min_lane, Imm(cval & ~seg & 31))
        seg = Imm(seg)
    else:
        cval, seg, t, notseg, top, min_lane, max_lane = (b.tmp() for _ in range(7))
        b.emit("and", cval, packed, Imm(31))
        b.emit("shr.u", t, packed, Imm(8))
        b.emit("and", seg, t, Imm(31))
        b.emit("xor", notseg, seg, Imm(31))
        b.emit("and", top, cval, notseg)
        b.emit("and", min_lane, me, seg)
        b.emit("or", max_lane, min_lane, top)
    if isinstance(lane, Imm):
        bval = Imm(lane.value & 31)
    else:
        bval = b.tmp()
        b.emit("and", bval, lane, Imm(31))
    j, ok = b.tmp(), b.tmp()
    if mode == "up":
        b.emit("sub", j, me, bval)
        b.emit("setge.s", ok, j, max_lane)
    elif mode == "down":
        b.emit("add", j, me, bval)
        b.emit("setle.s", ok, j, max_lane)
    elif mode == "bfly":
        b.emit("xor", j, me, bval)
        b.emit("setle.u", ok, j, max_lane)
    elif mode == "idx":
        high = b.tmp()
        if isinstance(seg, Imm):
            b.emit("and", high, bval, Imm(~seg.value & 31))
        else:
            notseg = b.tmp()
            b.emit("xor", notseg, seg, Imm(31))
            b.emit("and", high, bval, notseg)
        b.emit("or", j, min_lane, high)
        b.emit("setle.u", ok, j, max_lane)
    else:
        raise fail(ins, f"{ins.opcode} is not supported")
    return j, ok


def ballot(lw, d, p) -> None:
    """d = the 32-lane ballot of predicate p over the group's non-exited lanes: each
    machine warp ORs its native ballot, shifted to its 4 lanes' place, into the group's
    vote word; group barrier; every lane reads the word; group barrier; each machine warp
    clears the bits it set (atomics do not race with atomics: the next vote may already
    be ORing in), so the word is 0 again whatever warps exit before it."""
    b = lw.b
    lw.fn.warp_scratch = max(lw.fn.warp_scratch, VOTES)
    tid, mine, place, shifted, group, old, keep, old2 = (b.tmp() for _ in range(8))
    b.emit("tid", tid)
    b.emit("ballot", mine, p)
    b.emit("and", place, tid, Imm(WARP_SIZE - LANES))      # 4 x the warp's place in 8
    b.emit("shl", shifted, mine, place)
    b.emit("shr.u", group, tid, Imm(5))
    word = _word(lw, group, "warp_votes")
    b.emit("atom.shared.or", old, word, shifted)
    group_barrier(lw)
    b.emit("ld.shared", d, word)
    group_barrier(lw)
    b.emit("xor", keep, shifted, Imm(FULL))
    b.emit("atom.shared.and", old2, word, keep)


def vote(lw, ins, d, p) -> None:
    """PTX vote.sync.{ballot,any,all,uni} over the 32-lane warp."""
    b, parts = lw.b, ins.parts
    if "ballot" in parts:
        ballot(lw, d, p)
        return
    bal = b.tmp()
    if "any" in parts:
        ballot(lw, bal, p)
        b.emit("setne", d, bal, Imm(0))
    elif "all" in parts:
        np_ = b.tmp()
        b.emit("seteq", np_, p, Imm(0))
        ballot(lw, bal, np_)
        b.emit("seteq", d, bal, Imm(0))
    elif "uni" in parts:
        active, none, full = b.tmp(), b.tmp(), b.tmp()
        ballot(lw, bal, p)
        ballot(lw, active, Imm(1))
        b.emit("seteq", none, bal, Imm(0))
        b.emit("seteq", full, bal, active)
        b.emit("or", d, none, full)
    else:
        raise fail(ins, f"{ins.opcode} is not supported")


def match(lw, ins, d, pred, a, mask) -> None:
    """PTX match.sync.{any,all}.b32 over the 32-lane warp: d = the member-mask lanes whose
    value equals this lane's (any), or the member mask if they all do, else 0 (all; pred
    says which)."""
    b = lw.b
    if not ({"any", "all"} & set(ins.parts)):
        raise fail(ins, f"{ins.opcode} is not supported")
    lw.fn.warp_scratch = max(lw.fn.warp_scratch, SCRATCH)
    tid = b.tmp()
    b.emit("tid", tid)
    b.emit("st.shared", None, _word(lw, tid, "warp_scratch"), a)
    group_barrier(lw)
    me, base, room, count, acc, k = (b.tmp() for _ in range(6))
    b.emit("and", me, tid, Imm(WARP_SIZE - 1))
    b.emit("sub", base, tid, me)
    b.emit("sub", room, Sym("warp_threads"), base)
    b.emit("min.u", count, room, Imm(WARP_SIZE))      # the warp's existing lanes
    b.emit("mov", acc, Imm(0))
    b.emit("mov", k, Imm(0))
    head, done = b.new_block("match"), b.new_block("matched")
    b.finish(Goto(head.name))
    b.start(head)
    lane, other, same, named, bit, hit, more = (b.tmp() for _ in range(7))
    b.emit("add", lane, base, k)
    b.emit("ld.shared", other, _word(lw, lane, "warp_scratch"))
    b.emit("seteq", same, other, a)
    b.emit("shr.u", named, mask, k)
    b.emit("and", bit, named, same)
    b.emit("and", hit, bit, Imm(1))
    shifted = b.tmp()
    b.emit("shl", shifted, hit, k)
    b.emit("or", acc, acc, shifted)
    b.emit("add", k, k, Imm(1))
    b.emit("setlt.u", more, k, count)
    b.finish(CondBr(more, head.name, done.name))
    b.start(done)
    if "any" in ins.parts:
        b.emit("mov", d, acc)
    else:
        ones, members, want = (b.tmp() for _ in range(3))
        b.emit("shl", ones, Imm(1), count)                # 1 << 32 is 0 on the machine
        b.emit("sub", members, ones, Imm(1))
        b.emit("and", want, members, mask)
        if pred is None:
            pred = b.tmp()
        b.emit("seteq", pred, acc, want)
        b.emit("selp", d, mask, Imm(0), pred)
    group_barrier(lw)
