"""machine.shift: shl, shr.u, shr.s (PTX clamping: the amount is the whole 32-bit b as an
unsigned number; shl and shr.u by >= 32 give 0, shr.s by >= 32 the sign fill), exact
for every 32-bit a and b, in two levels so the width stays small.

- level 1 (`shift.P.L`, a unit reading only the operands and the op bits, so it lands in
  alu_low's layer): y = a shifted by s_lo = b mod 4, y_i = a_(i - s_lo) for shl,
  a_(i + s_lo) for shr.u / shr.s (a_31 past bit 31 for shr.s); -1 bits for any other
  operation. 32 bits, the only signal the family adds to the residual.
- level 2 (alu_high's body), with s_hi = (b >> 2) & 7 read from b's bits and
  big = [b >= 32] = [any of bits 5..31 set]: r_i = y_(i - 4 s_hi) (shl),
  y_(i + 4 s_hi) (shr) unless big; shr.s's fill a_31 where i + 4 s_hi > 31 or big (one
  step per bit on s_hi + 8 * (number of set high bits)).
The selections are `gated` units: one SwiGLU unit adds `up` when an integer gate form
sits at its maximum (a sum of 0/1 conditions that are all true, minus the set high bits
of b), half the units of a step.
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.logic import Ctx, gated, unit
from qgpu.primitives import Form, plus, scaled

SHIFT = ("shl", "shr.u", "shr.s")
LO_BITS = 2  # level 1 shifts by b mod 4
HI_BITS = 3  # level 2 shifts by 4 * ((b >> 2) & 7) (when b < 32)
FILL_BIG = 256.0  # > the range of the fill's amount form (0..7 + 8 * 27)


def _is(ctx: Ctx, ref, i: int, value: int) -> Form:
    """[bit i of ref == value] as a 0/1 form."""
    x = ctx.v01(ref, i)
    return x if value else plus(ctx.const(1), scaled(x, -1))


def _match(ctx: Ctx, b, lo: int, n: int, value: int) -> Form:
    """The number of bits lo..lo+n-1 of b that agree with value (n exactly when b's
    field equals value)."""
    return plus(*(_is(ctx, b, lo + t, value >> t & 1) for t in range(n)))


def level1(view: StageView, lane: int):
    """y: a shifted by s_lo = b mod 4 (left for shl, right for shr.u / shr.s with the
    sign fill for shr.s), -1 bits for every other operation."""
    ins, opnd = view.ins, view.operands[lane]
    a, b = opnd[0:32], opnd[32:64]

    def body(ctx, outs):
        (y,) = outs
        shl, shrs = ctx.v01(ins.op("shl")), ctx.v01(ins.op("shr.s"))
        shr = plus(ctx.v01(ins.op("shr.u")), shrs)
        for j in range(1 << LO_BITS):
            lo = _match(ctx, b, 0, LO_BITS, j)
            for i in range(32):
                if i - j >= 0:
                    gated(ctx, plus(lo, shl), LO_BITS + 1, ctx.v01(a, i - j), {y[i]: 2.0})
                if i + j <= 31:
                    gated(ctx, plus(lo, shr), LO_BITS + 1, ctx.v01(a, i + j), {y[i]: 2.0})
                else:
                    gated(ctx, plus(lo, shrs), LO_BITS + 1, ctx.v01(a, 31), {y[i]: 2.0})

    p = ins.position
    (y,) = unit(view.c, f"shift.{p}.{lane}", [opnd, ins.ops], [(f"shift.y.{p}.{lane}", BITS, 32)],
                body)
    return y


def build(view: StageView, lane: int) -> Extension | None:

    if not view.ins.has("shl"):  # not compiled into this machine (MachineSpec.ops)
        return None
    y = level1(view, lane)
    ins, opnd = view.ins, view.operands[lane]
    a, b = opnd[0:32], opnd[32:64]

    def high(ctx: Ctx, r: list[int]) -> None:
        shl, shrs = ctx.v01(ins.op("shl")), ctx.v01(ins.op("shr.s"))
        shr = plus(ctx.v01(ins.op("shr.u")), shrs)
        big = ctx.sum01(b, range(LO_BITS + HI_BITS, 32))  # 0 exactly when b < 32
        for k in range(1 << HI_BITS):
            hi = plus(_match(ctx, b, LO_BITS, HI_BITS, k), scaled(big, -1))
            for i in range(32):
                if i - 4 * k >= 0:
                    gated(ctx, plus(hi, shl), HI_BITS + 1, ctx.v01(y, i - 4 * k), {r[i]: 2.0})
                if i + 4 * k <= 31:
                    gated(ctx, plus(hi, shr), HI_BITS + 1, ctx.v01(y, i + 4 * k), {r[i]: 2.0})
        amount = plus(ctx.num(b, LO_BITS, LO_BITS + HI_BITS), scaled(big, 1 << HI_BITS))
        for i in range(32):  # shr.s's fill: i + 4 s_hi > 31, or b >= 32
            ctx.step(amount, -(-(32 - i) // 4), {r[i]: 2.0}, when=[shrs, ctx.v01(a, 31)],
                     big=FILL_BIG)

    return Extension(inputs=[y], high=high)
