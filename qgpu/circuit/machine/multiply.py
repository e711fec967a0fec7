"""machine.multiply: `mul` (the low 32 bits of a * b; signed and unsigned agree there) for
one instruction position and lane, in three MLPs.

A product of two runtime values cannot sit in the residual as a normal-scale integer (the
norm ledger needs +-1 bits or one-hots there), so the exact partial sums of the product
travel as RAW dims: integers n written as n * UNIT (UNIT = 2^-44, |n| < 2^21, so every
value is an exact float32 and all of them together square-sum far below the ledger's
TINY_BUDGET; each signal declares its bound as its `scale`).

- `products` (reads only the operands and the op bit, so it shares alu_low's MLP): for
  j < 16 the prefix sums P_j = sum_{i+k <= j} 2^(i+k) a_i b_k (< 2^20), for j >= 16
  H_j = sum_{16 <= i+k <= j} 2^(i+k-16) a_i b_k (< 2^21). One SwiGLU unit per (j, i):
  gate 64 a_i + 64 mul (+-1 bits: exactly -128, 0 or 128, silu -0, 0 or 128, so the op
  gates here and a disabled multiply leaves every sum 0), up = sum_k 2^(i+k) b01_k.
- `mid`: the low 16 result bits as sawtooth steps on P_j (bit j flips at every multiple
  of 2^j); and per high bit j = 16 + t the small value M_j = (H_j mod 2^(t+1)) + c16,
  c16 = floor(P_15 / 2^16) in 0..15 (the carry into bit 16): a copy of H_j, minus
  2^(t+1) per step [H_j >= q 2^(t+1)], plus one per step [P_15 >= m 2^16] (those 15
  steps add into all 16 M_j at once). M_j < 2^(t+1) + 16 is RAW again.
- the high part (in alu_high): bits 0..15 copied (one linear unit each), bit 16 + t as
  the sawtooth of M_j at multiples of 2^t: 2 or 3 steps for t >= 3, 16 at most (t = 0),
  since H_j + c16 and M_j agree modulo 2^(t+1).
The costly thermometers (about one step per 2^(t+1) of H_j's range) run in the mid MLP,
so alu_high, the fullest MLP of a stage, gains only about 130 units per lane.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from qgpu.circuit.ir import BITS, RAW, Signal
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.circuit.machine.spec import SUPPORTED_OPS
from qgpu.circuit.primitives import plus, scaled

if TYPE_CHECKING:  # families imports this module at its end
    from qgpu.circuit.machine.families import Extension, StageView

LO = 16
UNIT = 2.0 ** -44  # the RAW value of the integer 1
CARRY_MAX = 15  # c16 = floor(P_15 / 2^16) <= 15 (P_15 <= 15 * 2^16 + 1)


def p_max(j: int) -> int:
    """The largest P_j: column m holds m + 1 pairs of bits."""
    return sum((m + 1) << m for m in range(j + 1))


def h_max(j: int) -> int:
    """The largest H_j (columns 16..j, weights from 2^0)."""
    return sum((m + 1) << (m - LO) for m in range(LO, j + 1))


def products(view: StageView, lane: int) -> Signal:
    """P_0..P_15 | H_16..H_31 as RAW dims (0 unless the op is mul)."""
    opnd, en = view.operands[lane], view.ins.op("mul")
    a, b = opnd[0:32], opnd[32:64]

    def body(ctx, outs):
        (cols,) = outs
        gate_en = {ctx.d(en)[0]: 64.0}
        for j in range(32):
            base = 0 if j < LO else LO
            for i in range(j + 1):
                up = plus(*(scaled(ctx.v01(b, k), 2.0 ** (i + k - base))
                            for k in range(max(0, base - i), j - i + 1)))
                ctx.mlp.unit(plus({ctx.d(a)[i]: 64.0}, gate_en), up, {cols[j]: UNIT / 128})

    p = view.ins.position
    (cols,) = unit(view.c, f"mul.products.{p}.{lane}", [a, b, en],
                   [(f"mul.cols.{p}.{lane}", RAW, 32, UNIT * 2 ** 21)], body)
    return cols


def mid(view: StageView, lane: int, cols: Signal) -> tuple[Signal, Signal]:
    """The low 16 result bits (-1 when the op is not mul) and M_16..M_31 (RAW)."""

    def body(ctx, outs):
        lo, res = outs
        col = ctx.d(cols)

        def raw(j):
            return {col[j]: 1.0 / UNIT}

        for j in range(LO):
            for k in range(1, p_max(j) // 2 ** j + 1):
                ctx.step(raw(j), k * 2 ** j, {lo[j]: 2.0 if k % 2 else -2.0})
        for t in range(LO):
            j = LO + t
            ctx.linear({col[j]: 1.0}, {res[t]: 1.0})
            for q in range(1, h_max(j) // 2 ** (t + 1) + 1):
                ctx.step(raw(j), q * 2 ** (t + 1), {res[t]: -(2.0 ** (t + 1)) * UNIT})
        for m in range(1, CARRY_MAX + 1):
            ctx.step(raw(LO - 1), m * 2 ** LO, {d: UNIT for d in res})

    p = view.ins.position
    lo, res = unit(view.c, f"mul.mid.{p}.{lane}", [cols],
                   [(f"mul.lo.{p}.{lane}", BITS, LO),
                    (f"mul.hi.{p}.{lane}", RAW, 32 - LO, UNIT * 2 ** (LO + 1))], body)
    return lo, res


def build(view: StageView, lane: int) -> Extension | None:
    from qgpu.circuit.machine.families import Extension

    if "mul" not in SUPPORTED_OPS:
        return None
    lo, res = mid(view, lane, products(view, lane))

    def high(ctx, r):
        for i in range(LO):
            ctx.linear(ctx.v01(lo, i), true_bit(r[i]))
        for t in range(32 - LO):
            m = {ctx.d(res)[t]: 1.0 / UNIT}
            for k in range(1, (2 ** (t + 1) - 1 + CARRY_MAX) // 2 ** t + 1):
                ctx.step(m, k * 2 ** t, {r[LO + t]: 2.0 if k % 2 else -2.0})

    return Extension([lo, res], high)
