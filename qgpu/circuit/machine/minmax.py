"""machine.minmax: min.s, max.s, min.u, max.u, exact for every 32-bit a and b.

A 32-bit difference is not exact in fp32, so the comparison takes two MLPs:
- level 1 (`minmax.P.L`, reads only the operands and op bits: alu_low's layer), from the
  exact half differences d_hi = A_hi - B_hi (signed or unsigned per op, |d_hi| < 2^16)
  and d_lo = A_lo - B_lo (unsigned): sigma = [the high halves alone pick a] (max:
  d_hi > 0, min: d_hi < 0), tie = [d_hi == 0], lo = [the low halves pick a on a tie]
  (max: d_lo >= 0, min: d_lo <= 0), each gated by the op bits (all -1 otherwise);
- level 2 (alu_high's body), per bit: r_i = b_i + (a_i - b_i) [pick a], with
  [pick a] = sigma or (tie and lo) (sigma and tie are exclusive): three `gated` units.
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.logic import WIDE, Ctx, true_bit, unit
from qgpu.circuit.machine.shift import gated
from qgpu.primitives import plus, scaled

MINMAX = {"min.s": (True, -1.0), "max.s": (True, 1.0), "min.u": (False, -1.0),
          "max.u": (False, 1.0)}  # name: (signed, +1 for max / -1 for min)
LO = 16
SIGMA, TIE, LOW = 0, 1, 2


def level1(view: StageView, lane: int):
    ins, opnd = view.ins, view.operands[lane]
    a, b = opnd[0:32], opnd[32:64]

    def body(ctx, outs):
        (o,) = outs
        en = {name: ctx.v01(ins.op(name)) for name in MINMAX}
        d_lo = plus(ctx.num(a, 0, LO), scaled(ctx.num(b, 0, LO), -1))
        for name, (signed, sense) in MINMAX.items():
            d_hi = plus(ctx.num(a, LO, 32, signed), scaled(ctx.num(b, LO, 32, signed), -1))
            ctx.step(scaled(d_hi, sense), 1, true_bit(o[SIGMA]), when=[en[name]], big=WIDE)
            ctx.step(scaled(d_lo, sense), 0, true_bit(o[LOW]), when=[en[name]], big=WIDE)
        d_hi = plus(ctx.num(a, LO, 32), scaled(ctx.num(b, LO, 32), -1))  # == 0 either way
        anyop = plus(*en.values())
        ctx.step(d_hi, 0, true_bit(o[TIE]), when=[anyop], big=WIDE)
        ctx.step(d_hi, 1, {o[TIE]: -2.0}, when=[anyop], big=WIDE)

    p = ins.position
    (out,) = unit(view.c, f"minmax.{p}.{lane}", [opnd, ins.ops],
                  [(f"minmax.{p}.{lane}", BITS, 3)], body)
    return out


def build(view: StageView, lane: int) -> Extension | None:

    if not view.ins.has(*MINMAX):  # not compiled into this machine (MachineSpec.ops)
        return None
    sel = level1(view, lane)
    ins, opnd = view.ins, view.operands[lane]
    a, b = opnd[0:32], opnd[32:64]

    def high(ctx: Ctx, r: list[int]) -> None:
        anyop = plus(*(ctx.v01(ins.op(name)) for name in MINMAX))
        for i in range(32):
            diff = plus(ctx.v01(a, i), scaled(ctx.v01(b, i), -1))
            gated(ctx, anyop, 1, ctx.v01(b, i), {r[i]: 2.0})
            gated(ctx, ctx.v01(sel, SIGMA), 1, diff, {r[i]: 2.0})
            gated(ctx, plus(ctx.v01(sel, TIE), ctx.v01(sel, LOW)), 2, diff, {r[i]: 2.0})

    return Extension(inputs=[sel], high=high)
