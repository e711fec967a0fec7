"""machine.multiply: `mul` (the low 32 bits of a * b; signed and unsigned agree there) for
one instruction position and lane, in three MLPs.

A product of two runtime values cannot sit in the residual as a normal-scale integer (the
norm ledger needs +-1 bits or one-hots there), so the exact partial sums of the product
travel as RAW dims: integers n written as n * UNIT (UNIT = 2^-44, |n| < 2^21, so every
value is an exact float32 and all of them together square-sum far below the ledger's
TINY_BUDGET; each RAW signal declares its bound as its `scale`).

- `products` (reads only the operands and the op bit, so it shares alu_low's MLP): for
  j < 16 the prefix sums P_j = sum_{i+k <= j} 2^(i+k) a_i b_k (< 2^20), for j >= 16
  H_j = sum_{16 <= i+k <= j} 2^(i+k-16) a_i b_k (< 2^21). One SwiGLU unit per (j, i):
  gate 64 a_i + 64 mul (+-1 bits: exactly -128, 0 or 128, silu -0, 0 or 128, so the op
  gates here and a disabled multiply leaves every sum 0), up = sum_k 2^(i+k) b01_k.
- `mid`: the low 16 result bits as sawtooth steps on P_j (bit j flips at every multiple
  of 2^j); the carry into bit 16, c16 = floor(P_15 / 2^16) in 0..15, as a RAW count;
  per high bit j = 16 + t the RAW R_j = -2^(t+1) floor(H_j / 2^(t+1)) (a thermometer),
  so that M_j = H_j + R_j + c16 = (H_j mod 2^(t+1)) + c16 < 2^(t+1) + 16.
- the high part (in alu_high): bits 0..15 copied (one linear unit each), bit 16 + t as
  the sawtooth of M_j at multiples of 2^t: 2 steps for t >= 4, 16 at most (t = 0), since
  H_j + c16 and M_j agree modulo 2^(t+1). The thermometers run in the mid MLP, so
  alu_high, the fullest MLP of a stage, gains only about 130 units per lane.

Exactness. The forms here are exact integers (products of clean bits, no table reads), so
the steps use integer offsets (`_step`: silu(G(L - T + 1)) - silu(G(L - T)), G = 128:
exactly 0 for L <= T - 1, exactly G for L >= T). A step that is on adds two terms of size
c (L - T) that cancel; a float32 sum stays exact in any order while the magnitudes of all
terms reaching one output dim stay below 2^24 times its granularity. With L up to 2^20
that bound is checked for every output dim when the units are built (`_budget`), and a
sawtooth or thermometer too large for one dim is split over several (groups of whole
(+, -) step pairs, so every part of a sawtooth is again 0/1 and the bit is their sum).
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS, RAW, Signal
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.primitives import CircuitError, Form, plus, scaled

LO = 16
UNIT = 2.0 ** -44  # the RAW value of the integer 1
CARRY_MAX = 15  # c16 = floor(P_15 / 2^16) <= 15 (P_15 <= 15 * 2^16 + 1)
GAIN = 128.0  # >= 88.73: silu(-GAIN) is exactly -0
EXACT = 2 ** 24  # float32 sums of integers (in units of a dim's granularity) stay exact


def p_max(j: int) -> int:
    """The largest P_j: column m holds m + 1 pairs of bits."""
    return sum((m + 1) << m for m in range(j + 1))


def h_max(j: int) -> int:
    """The largest H_j (columns 16..j, weights from 2^0)."""
    return sum((m + 1) << (m - LO) for m in range(LO, j + 1))


def _step(ctx, form: Form, t: int, out: Form) -> None:
    """out += coeff * [form >= t] for an exactly integer-valued form."""
    for offset, sign in ((1.0, 1.0), (0.0, -1.0)):
        ctx.mlp.unit(plus(scaled(form, GAIN), {ctx.one: GAIN * (offset - t)}),
                     {ctx.one: 1.0}, scaled(out, sign / GAIN))


def _budget(thresholds, top: int) -> int:
    """Sum of the magnitudes (in units of the step coefficient) of the terms steps at these
    thresholds add to a dim, at the worst input `top`: c (L - T + 1) and c (L - T)."""
    return sum(2 * (top - t) + 1 for t in thresholds)


def _groups(thresholds: list[int], top: int, pair: int, limit: int) -> list[list[int]]:
    """Consecutive thresholds split so that each group's terms stay exact in one dim
    (below `limit` step coefficients); whole runs of `pair` thresholds."""
    groups: list[list[int]] = [[]]
    for i in range(0, len(thresholds), pair):
        run = thresholds[i:i + pair]
        if groups[-1] and _budget(groups[-1] + run, top) >= limit:
            groups.append([])
        groups[-1] += run
        if _budget(groups[-1], top) >= limit:
            raise CircuitError(f"multiply: steps at {run} on a form up to {top} are not exact")
    return groups


def _sawtooth(j: int) -> list[list[int]]:
    """Bit j of P_j: the thresholds k 2^j, split into BITS dims (coefficient 2, granularity
    1: the dim's initial -1)."""
    ts = [k * 2 ** j for k in range(1, p_max(j) // 2 ** j + 1)]
    return _groups(ts, p_max(j), 2, (EXACT - 1) // 2)


def _thermometer(t: int) -> list[list[int]]:
    """floor(H_j / 2^(t+1)), j = 16 + t: the thresholds q 2^(t+1), split into RAW dims
    (coefficient and granularity 2^(t+1) UNIT)."""
    ts = [q * 2 ** (t + 1) for q in range(1, h_max(LO + t) // 2 ** (t + 1) + 1)]
    return _groups(ts, h_max(LO + t), 1, EXACT)


CARRY = _groups([m * 2 ** LO for m in range(1, CARRY_MAX + 1)], p_max(LO - 1), 1, EXACT)


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


def _layout():
    """Dims of mid's outputs: per low bit its sawtooth parts (BITS), per high bit its
    thermometer parts (RAW), then the carry parts (RAW)."""
    lo, k = [], 0
    for j in range(LO):
        lo.append(list(range(k, k + len(_sawtooth(j)))))
        k += len(lo[-1])
    hi, k = [], 0
    for t in range(32 - LO):
        hi.append(list(range(k, k + len(_thermometer(t)))))
        k += len(hi[-1])
    carry = list(range(k, k + len(CARRY)))
    return lo, hi, carry


LO_DIMS, HI_DIMS, CARRY_DIMS = _layout()


def mid(view: StageView, lane: int, cols: Signal) -> tuple[Signal, Signal]:
    """The low result bits as sawtooth parts (BITS: -1 when the op is not mul) and the
    RAW thermometers R_j and carry parts."""

    def body(ctx, outs):
        lo, res = outs
        col = ctx.d(cols)

        def raw(j):
            return {col[j]: 1.0 / UNIT}

        for j in range(LO):
            for part, ts in zip(LO_DIMS[j], _sawtooth(j), strict=True):
                for k, t in enumerate(ts):
                    _step(ctx, raw(j), t, {lo[part]: -2.0 if k % 2 else 2.0})
        for t in range(32 - LO):
            for part, ts in zip(HI_DIMS[t], _thermometer(t), strict=True):
                for q in ts:
                    _step(ctx, raw(LO + t), q, {res[part]: -(2.0 ** (t + 1)) * UNIT})
        for part, ts in zip(CARRY_DIMS, CARRY, strict=True):
            for m in ts:
                _step(ctx, raw(LO - 1), m, {res[part]: UNIT})

    p = view.ins.position
    n_lo, n_hi = sum(map(len, LO_DIMS)), sum(map(len, HI_DIMS)) + len(CARRY_DIMS)
    lo, res = unit(view.c, f"mul.mid.{p}.{lane}", [cols],
                   [(f"mul.lo.{p}.{lane}", BITS, n_lo),
                    (f"mul.hi.{p}.{lane}", RAW, n_hi, UNIT * 2 ** 21)], body)
    return lo, res


def build(view: StageView, lane: int) -> Extension | None:

    if not view.ins.has("mul"):  # not compiled into this machine (MachineSpec.ops)
        return None
    cols = products(view, lane)
    lo, res = mid(view, lane, cols)

    def high(ctx, r):
        col, hi = ctx.d(cols), ctx.d(res)
        carry = {hi[d]: 1.0 / UNIT for d in CARRY_DIMS}
        for j in range(LO):
            ctx.linear(plus(*(ctx.v01(lo, d) for d in LO_DIMS[j])), true_bit(r[j]))
        for t in range(32 - LO):
            m = plus({col[LO + t]: 1.0 / UNIT}, {hi[d]: 1.0 / UNIT for d in HI_DIMS[t]}, carry)
            for k in range(1, (2 ** (t + 1) - 1 + CARRY_MAX) // 2 ** t + 1):
                _step(ctx, m, k * 2 ** t, {r[LO + t]: 2.0 if k % 2 else -2.0})

    return Extension([cols, lo, res], high)
