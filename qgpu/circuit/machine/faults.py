"""machine.faults: the model detects a faulting memory access itself and writes the
fault's record, `TRAP(kind, lane, p) V(lo) V(hi)` (docs/protocol.md, isa.faults), as
the next tokens after the block's EXEC instead of its R/ADDR/END records.

The interpreter faults on the first memory operation in stage order (slot order within
a stage), at its lowest active lane whose byte address u32(a + offset) is misaligned
(kind misaligned-*, checked first) or past the space's words (out-of-bounds-*). Per
position P (docs/machine.md, "Faults", has the costs):
- `fault.check.P.L` (per lane): from operand a's *sources* (the register read and the
  immediate, at most one non-zero, or the forwarded result of an earlier position; each
  source's steps gated by its selector), so that it runs beside the operands unit and
  not in alu_low's full MLP. With the exact half sums S = a_lo + off_lo and H = a_hi +
  off_hi (< 2^17): mis = [(a + off) mod 4 != 0] (from the two low bits of each),
  carry = [S >= 2^16], lo0 = [S < lim], lo1 = [2^16 <= S < 2^16 + lim] (lim = 4 * words
  of the operation's space), p0 = [H in {0, 2^16}], p1 = [H = 2^16 - 1]: the address is
  in range iff (p0 and lo0) or (p1 and lo1). Every step is gated by the memory-op bits
  (other operations: all -1).
- `fault.lanes.P`: f[L] = the lane is active and its access faults, m[L] = it is active
  and misaligned.
- `fault.pick.P`: the first faulting lane's operand a and carry (gated units: only the
  first faulting lane of the block's first faulting position passes; else 0) and the
  running record `fault.summary.P` (a flag and the TRAP token's 6 field bits: p, lane,
  kind), which passes an earlier position's record on unchanged;
  `fault.addr.P`: a + offset of that lane (sawtooth steps on the exact partial sums, the
  high half with the carry), 0 unless P is the block's first faulting position.
The address is latched with the position's store records (`records.P`, written at
every EXEC) and the emission's record chain (`emission._records_pick`) takes its low
half at the TRAP token and its high half at the V after it. `emit` (EXEC and the final
flag) enables the TRAP rule (`output_value` over the summary's field bits) and turns
off the R/ADDR/END rules there. A divergent barrier: machine.barriers.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.ir import BITS, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping
from qgpu.circuit.machine.logic import WIDE, gated, true_bit, unit
from qgpu.circuit.machine.rom import Instruction
from qgpu.circuit.machine.spec import ADDRESSED_OPS
from qgpu.isa import limits
from qgpu.primitives import plus, scaled

LO = 16
MIS, CARRY, LO0, LO1, P0, P1 = range(6)  # fault.check's bits
CHECK_BITS = 6
FIELD_BITS = 6  # TRAP's memory-kind fields: p (2 bits), lane (2), kind (2: oob, shared)


def spaces(ins: Instruction) -> tuple[list[str], list[str]]:
    """The compiled-in global and shared memory operations of a position."""
    ops = [n for n in ADDRESSED_OPS if ins.has(n)]
    return [n for n in ops if ".shared" not in n], [n for n in ops if ".shared" in n]


def check(c: Circuit, ins: Instruction, lane: int, reg: Signal, earlier: list) -> Signal | None:
    """fault.check.P.L: mis | carry | lo0 | lo1 | p0 | p1 (module docstring); None when
    the position holds no memory operation. It reads operand a's sources, not the
    operand (so it runs beside the operands unit, where the MLP has room): the register
    read and the immediate (at most one is non-zero), or the forwarded result of an
    earlier position; each source's steps are gated by its selector."""
    glob, shr = spaces(ins)
    if not glob and not shr:
        return None
    fwd = ins.forwards[0]

    def body(ctx, outs):
        (o,) = outs
        off = ins.offset
        mem = plus(*(ctx.v01(ins.op(n)) for n in glob + shr))
        sources = []  # (bit i's 0/1 form, the source's selector conditions)
        own = [] if not earlier else [plus(ctx.const(1), scaled(ctx.sum01(fwd), -1))]
        sources.append((lambda i: plus(ctx.v01(reg, i), ctx.v01(ins.imms[0], i)), own))
        for k, res in enumerate(earlier):
            sources.append((lambda i, res=res: ctx.v01(res, i), [ctx.v01(fwd, k)]))
        for bit, sel in sources:
            def num(lo, hi, bit=bit):
                return plus(*(scaled(bit(i), 2.0 ** (i - lo)) for i in range(lo, hi)))
            when = [mem, *sel]
            t = plus(num(0, 2), ctx.num(off, 0, 2))  # 0..6: misaligned iff t mod 4 != 0
            for thr, sign in ((1, 2.0), (4, -2.0), (5, 2.0)):
                ctx.step(t, thr, {o[MIS]: sign}, when=when)
            s = plus(num(0, LO), ctx.num(off, 0, LO))
            h = plus(num(LO, 32), ctx.num(off, LO, 32))
            ctx.step(s, 1 << LO, true_bit(o[CARRY]), when=when, big=WIDE)
            for names, words in ((glob, limits.MODEL_GLOBAL_WORDS),
                                 (shr, limits.MODEL_SHARED_WORDS)):
                if not names:
                    continue
                lim = 4 * words
                sp = [plus(*(ctx.v01(ins.op(n)) for n in names)), *sel]
                ctx.step(scaled(s, -1), 1 - lim, true_bit(o[LO0]), when=sp, big=WIDE)
                ctx.step(s, 1 << LO, true_bit(o[LO1]), when=sp, big=WIDE)
                ctx.step(s, (1 << LO) + lim, {o[LO1]: -2.0}, when=sp, big=WIDE)
            ctx.step(scaled(h, -1), 0, true_bit(o[P0]), when=when, big=WIDE)
            ctx.step(h, 1 << LO, true_bit(o[P0]), when=when, big=WIDE)
            ctx.step(h, (1 << LO) + 1, {o[P0]: -2.0}, when=when, big=WIDE)
            ctx.step(h, (1 << LO) - 1, true_bit(o[P1]), when=when, big=WIDE)
            ctx.step(h, 1 << LO, {o[P1]: -2.0}, when=when, big=WIDE)

    name = f"fault.check.{ins.position}.{lane}"
    args = [reg, ins.imms[0], ins.ops, ins.offset, *([fwd] if earlier else []), *earlier]
    (out,) = unit(c, name, args, [(name, BITS, CHECK_BITS)], body)
    return out


def lanes(c: Circuit, bk: Bookkeeping, ins: Instruction, checks: dict[int, Signal]) -> Signal:
    """fault.lanes.P: f[L] (bits 0..3) = lane L is active and faults; m[L] (4..7) = it is
    active and misaligned."""
    glob, shr = spaces(ins)

    def body(ctx, outs):
        (o,) = outs
        mem = plus(*(ctx.v01(ins.op(n)) for n in glob + shr))
        for lane in range(LANES):
            ck = checks[lane]
            act = ctx.v01(bk.cur_mask, lane)
            aligned = plus(ctx.const(1), scaled(ctx.v01(ck, MIS), -1))
            ctx.step(plus(act, mem), 2, true_bit(o[lane]))
            for p, lo in ((P0, LO0), (P1, LO1)):  # in range: (p0 and lo0) or (p1 and lo1)
                ctx.step(plus(act, mem, aligned, ctx.v01(ck, p), ctx.v01(ck, lo)), 5,
                         {o[lane]: -2.0})
            ctx.step(plus(act, ctx.v01(ck, MIS)), 2, true_bit(o[LANES + lane]))

    name = f"fault.lanes.{ins.position}"
    (out,) = unit(c, name, [bk.cur_mask, ins.ops, *checks.values()],
                  [(name, BITS, 2 * LANES)], body)
    return out


def pick(c: Circuit, bk: Bookkeeping, ins: Instruction, opnds: dict[int, Signal],
         checks: dict[int, Signal], f: Signal, before: Signal | None):
    """fault.pick.P: (sel, summary): sel = the first faulting lane's operand a (32 bits),
    its carry bit and `here` (this is the block's first faulting position; else all 0),
    one gated unit per bit; the running record: flag | TRAP field bits (p, lane,
    kind)."""
    p = ins.position
    _, shr = spaces(ins)

    def body(ctx, outs):
        sel, summ = outs
        prev = ctx.v01(before, 0) if before is not None else ctx.const(0)
        fresh = plus(ctx.const(1), scaled(prev, -1))  # no earlier position faulted
        any_f = ctx.sum01(f, range(LANES))
        for lane in range(LANES):
            a = opnds[lane][0:32]
            first = [ctx.v01(f, lane), fresh,
                     *(plus(ctx.const(1), scaled(ctx.v01(f, j), -1)) for j in range(lane))]
            gate = plus(*first)
            for j in range(32):
                gated(ctx, gate, len(first), ctx.v01(a, j), {sel[j]: 2.0})
            gated(ctx, gate, len(first), ctx.v01(checks[lane], CARRY), {sel[32]: 2.0})
            for b in range(2):  # the lane's bits (TRAP field bits 2, 3)
                if lane >> b & 1:
                    ctx.step(ctx.const(1), 1, true_bit(summ[1 + 2 + b]), when=first)
            oob = plus(ctx.const(1), scaled(ctx.v01(f, LANES + lane), -1))
            ctx.step(oob, 1, true_bit(summ[1 + 4]), when=first)  # kind bit 0: out of bounds
        ctx.step(any_f, 1, true_bit(sel[33]), when=[fresh])
        ctx.step(plus(prev, any_f), 1, true_bit(summ[0]))
        for b in range(2):  # p's bits
            if p >> b & 1:
                ctx.step(any_f, 1, true_bit(summ[1 + b]), when=[fresh])
        if shr:  # kind bit 1: the shared space
            ctx.step(any_f, 1, true_bit(summ[1 + 5]),
                     when=[fresh, plus(*(ctx.v01(ins.op(n)) for n in shr))])
        if before is not None:
            for b in range(FIELD_BITS):
                ctx.step(ctx.v01(before, 1 + b), 1, true_bit(summ[1 + b]))

    args = [*opnds.values(), *checks.values(), ins.ops, f]
    sel, summ = unit(c, f"fault.pick.{p}", args + ([before] if before is not None else []),
                     [(f"fault.sel.{p}", BITS, 34),
                      (f"fault.summary.{p}", BITS, 1 + FIELD_BITS)], body)
    return sel, summ


def address(c: Circuit, ins: Instruction, sel: Signal) -> Signal:
    """fault.addr.P: the byte address a + offset of pick's lane (0 unless `here`): bit j
    is a sawtooth on the exact partial sum of bits 0..j (the high half's from bit 16,
    plus the lane's carry)."""

    def body(ctx, outs):
        (addr,) = outs
        off = ins.offset
        here = [ctx.v01(sel, 33)]
        for j in range(32):
            if j < LO:
                s = plus(*(scaled(plus(ctx.v01(sel, i), ctx.v01(off, i)), 2.0 ** i)
                           for i in range(j + 1)))
                unit_j = 2 ** j
            else:
                s = plus(*(scaled(plus(ctx.v01(sel, i), ctx.v01(off, i)), 2.0 ** (i - LO))
                           for i in range(LO, j + 1)), ctx.v01(sel, 32))
                unit_j = 2 ** (j - LO)
            for k, sign in ((1, 2.0), (2, -2.0), (3, 2.0)):
                ctx.step(s, k * unit_j, {addr[j]: sign}, when=here, big=WIDE)

    name = f"fault.addr.{ins.position}"
    (addr,) = unit(c, name, [sel, ins.offset], [(name, BITS, 32)], body)
    return addr


@dataclass
class Detector:
    """What the emission needs: per position the faulting address (0 unless the block's
    first fault is there), and the running record after the last position."""

    addrs: dict[int, Signal]
    summary: Signal | None


def stage(c: Circuit, bk: Bookkeeping, ins: Instruction, opnds: dict[int, Signal],
          regs: dict, earlier: dict, det: Detector) -> None:
    """The detector of one position; updates det. regs[lane]: operand a's register read;
    earlier[lane]: the results of the positions operand a may forward."""
    checks = {lane: check(c, ins, lane, regs[lane], earlier[lane]) for lane in range(LANES)}
    if checks[0] is None:
        return
    f = lanes(c, bk, ins, checks)
    sel, det.summary = pick(c, bk, ins, opnds, checks, f, det.summary)
    det.addrs[ins.position] = address(c, ins, sel)


def emit(c: Circuit, bk: Bookkeeping, det: Detector) -> Signal | None:
    """fault.emit: +1 at an EXEC whose block faults (the TRAP rule's condition)."""
    if det.summary is None:
        return None

    def body(ctx, outs):
        (o,) = outs
        ctx.step(ctx.v01(det.summary, 0), 1, true_bit(o[0]), when=[ctx.v01(bk.is_exec)])

    (out,) = unit(c, "fault.emit", [det.summary, bk.is_exec], [("fault.emit", BITS, 1)], body)
    return out
