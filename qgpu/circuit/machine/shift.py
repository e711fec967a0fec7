"""machine.shift: shl, shr.u, shr.s (PTX clamping: the amount is the whole 32-bit b as an
unsigned number; shl and shr.u by >= 32 give 0, shr.s by >= 32 the sign fill), exact
for every 32-bit a and b, in two levels so the width stays small.

- level 1 (`shift.P.L`, a unit reading only the operands and the op bits, so it lands in
  alu_low's layer): a shifted by s_lo = b mod 4, yL_i = a_(i - s_lo) for shl (-1 bits
  unless shl), yR_i = a_(i + s_lo) for shr.u / shr.s (the sign fill a_31 past bit 31
  for shr.s; -1 bits unless a right shift), F = a_31 and shr.s (the fill), and the
  one-hot of s_hi = (b >> 2) & 7 whose none member means b >= 32.
- level 2 (alu_high's body): r_i = yL_(i - 4 s_hi) + yR_(i + 4 s_hi) (F where
  i + 4 s_hi > 31, F alone when b >= 32): only one of yL, yR, F can be non-zero, so
  one unit per (bit, s_hi) covers the three operations.
Every selection is a `gated` unit: one SwiGLU unit adds `up` when an integer gate form
sits at its maximum (the gate is a sum of 0/1 conditions that are all true), half the
units of a step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgpu.circuit.ir import BITS, ONEHOT
from qgpu.circuit.machine.logic import Ctx, true_member, unit
from qgpu.circuit.primitives import Form, Threshold, plus, scaled
from qgpu.circuit.primitives_mlp import STEP_GAIN

if TYPE_CHECKING:  # families imports this module at its end (build imports it late)
    from qgpu.circuit.machine.families import Extension, StageView

SHIFT = ("shl", "shr.u", "shr.s")
LO_BITS = 2  # level 1 shifts by b mod 4
HI = 8  # level 2 shifts by 4 * ((b >> 2) & 7); the one-hot's none member is b >= 32
FILL = 64  # level 1's bit F = a_31 and shr.s


def gated(ctx: Ctx, gate: Form, on: float, up: Form, out: Form, name: str = "gated") -> None:
    """out += coeff * up when the integer form `gate` equals `on`, else exactly 0. The
    caller guarantees gate <= on for every input (a sum of 0/1 conditions, on = their
    number): the unit's gate gain * (gate - on + 1/2) is gain/2 (silu is the identity)
    when on and <= -gain/2 (silu is -0) otherwise. One unit; recorded as a threshold
    (offset 1/2) for the margin report."""
    g = plus(scaled(gate, STEP_GAIN), ctx.const(STEP_GAIN * (0.5 - on)))
    u = ctx.mlp.unit(g, up, scaled(out, 2.0 / STEP_GAIN))
    ctx.mlp.thresholds.append(Threshold(ctx.mlp.layer, u, gate, on, STEP_GAIN, 0.5, name))


def _is(ctx: Ctx, ref, i: int, value: int) -> Form:
    """[bit i of ref == value] as a 0/1 form."""
    x = ctx.v01(ref, i)
    return x if value else plus(ctx.const(1), scaled(x, -1))


def level1(view: StageView, lane: int):
    """(y: yL 32 | yR 32 | F bits, hi: one-hot of (b >> 2) & 7, none = b >= 32)."""
    ins, opnd = view.ins, view.operands[lane]
    a, b = opnd[0:32], opnd[32:64]

    def body(ctx, outs):
        y, hi = outs
        shl, shrs = ctx.v01(ins.op("shl")), ctx.v01(ins.op("shr.s"))
        shr = plus(ctx.v01(ins.op("shr.u")), shrs)
        for j in range(1 << LO_BITS):
            lo = plus(*(_is(ctx, b, t, j >> t & 1) for t in range(LO_BITS)))
            for i in range(32):
                if i - j >= 0:
                    gated(ctx, plus(lo, shl), LO_BITS + 1, ctx.v01(a, i - j), {y[i]: 2.0})
                if i + j <= 31:
                    gated(ctx, plus(lo, shr), LO_BITS + 1, ctx.v01(a, i + j), {y[32 + i]: 2.0})
                else:
                    gated(ctx, plus(lo, shrs), LO_BITS + 1, ctx.v01(a, 31), {y[32 + i]: 2.0})
        gated(ctx, shrs, 1, ctx.v01(a, 31), {y[FILL]: 2.0})
        high = ctx.sum01(b, range(LO_BITS + 3, 32))
        for k in range(HI):
            match = plus(*(_is(ctx, b, LO_BITS + t, k >> t & 1) for t in range(3)))
            gated(ctx, plus(match, scaled(high, -1)), 3, ctx.const(1), true_member(hi, k))

    p = ins.position
    y, hi = unit(view.c, f"shift.{p}.{lane}", [opnd, ins.ops],
                 [(f"shift.y.{p}.{lane}", BITS, 65), (f"shift.hi.{p}.{lane}", ONEHOT, HI)],
                 body)
    return y, hi


def build(view: StageView, lane: int) -> Extension:
    from qgpu.circuit.machine.families import Extension  # families imports this module

    y, hi = level1(view, lane)
    ins = view.ins

    def high(ctx: Ctx, r: list[int]) -> None:
        shift = plus(*(ctx.v01(ins.op(name)) for name in SHIFT))
        for k in range(HI):
            for i in range(32):
                up = [ctx.v01(y, i - 4 * k)] if i - 4 * k >= 0 else []
                up.append(ctx.v01(y, 32 + i + 4 * k) if i + 4 * k <= 31 else ctx.v01(y, FILL))
                gated(ctx, plus(ctx.v01(hi, k), shift), 2, plus(*up), {r[i]: 2.0})
        for i in range(32):  # b >= 32: the none member; only shr.s's fill is non-zero
            gated(ctx, plus(ctx.v01(hi, HI), shift), 2, ctx.v01(y, FILL), {r[i]: 2.0})

    return Extension(inputs=[y, hi], high=high)
