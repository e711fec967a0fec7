"""machine.warp: the warp operations, shuffles (`shfl.up`, `shfl.down`, `shfl.bfly`,
`shfl.idx`) and `ballot`, for lane L of one instruction position (docs/isa.md).

Shuffle (interpreter `_shfl`): from b's low 5 bits (lane or delta), c's clamp cv (bits
0-4) and segment mask s (bits 8-12), lane L's source is j (up: L - b, down: L + b, bfly:
L ^ b, idx: (L & s) | (b & ~s)) when j is in 0..3, active, and within the bound
max_lane = (L & s) | (cv & ~s) (up: j >= max_lane, the others: j <= max_lane); else
the lane keeps its own a. Two MLPs:

- `flags` (alu_low's layer, reads lane L's b, c, the active mask and the op bits): with
  G = [max_lane >= 4] = OR over k = 2..4 of (cv_k and not s_k) (a sum of 7 exclusive
  conjunctions) and, when G is 0, max_lane = 2 m1 + m0 with m_k = s_k ? L_k : cv_k
  (linear in cv once s0, s1 are fixed: 4 exclusive cases), the 0/1 flags
  G_le = G and (down, bfly or idx), G_up = G and up, Hb = idx and j >= 4 (an OR like
  G over b and s), and per source j != L (modes exclusive, j unique for the inputs):
  X_j = a down/bfly/idx source j, active (bound ignored; idx: its low 2 bits),
  Y_j = X_j and [2 m1 + m0 >= j] (the bound when G is 0),
  Z_j = an up source j, active, and [2 m1 + m0 <= j] (the bound when G is 0);
- the high body (alu_high's MLP): source j != L is taken iff
  F_j = G_le + X_j + Y_j - 3 Hb + 2 Z_j - G_up >= 2 (Y_j implies X_j: G ? X_j : Y_j for
  down/bfly/idx, Z_j and not G for up), and the lane keeps its own a iff
  -G_le - U - 2V + 3 Hb + G_up - 2 Z >= -1 (U, V, Z: the sums of X_j, Y_j, Z_j), so
  each result bit is one step per source (its a bit gates the step).

ballot: result bit m (m < 4) = [lane m active and the sum of its a bits >= 1], a step
per bit in the flags (every lane computes all four), added by one linear unit per bit in
the high body; the other bits stay 0. Every step is gated by the operation
bits (the flags by construction), so a disabled family adds exactly 0.
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS
from qgpu.circuit.machine.bookkeeping import LANES
from qgpu.circuit.machine.families import Extension, HighBody, StageView
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.primitives import Form, plus, scaled

SHFL = ("shfl.up", "shfl.down", "shfl.bfly", "shfl.idx")
G_LE, G_UP, HB, X, Y, Z, BALLOT = 0, 1, 2, 3, 3 + LANES, 3 + 2 * LANES, 3 + 3 * LANES
FLAGS = 3 + 4 * LANES
B, C, SEG = 32, 64, 72  # offsets of b, the clamp and the segment mask in the operands
LANE_BITS = 5  # b, clamp and segment mask fields (PTX: 5 bits each)


def _lit(x: Form, value: int, one: int) -> Form:
    """The 0/1 literal 'x == value' of a 0/1 form x."""
    return x if value else plus({one: 1.0}, scaled(x, -1.0))


def _or_of_and_not(xs: list[Form], ys: list[Form], one: int) -> list[list[Form]]:
    """OR over k of (x_k and not y_k) as exclusive conjunctions of literals: the first k
    that holds, every earlier k failing as (not x_k) or (x_k and y_k)."""
    terms, prefixes = [], [[]]
    for x, y in zip(xs, ys, strict=True):
        terms += [p + [x, _lit(y, 0, one)] for p in prefixes]
        prefixes = [p + q for p in prefixes for q in ([_lit(x, 0, one)], [x, y])]
    return terms


def flags(view: StageView, lane: int):
    """The flags of lane `lane` (BITS, layout G_LE, G_UP, HB, X_j, Y_j, Z_j, and the
    ballot's result bits)."""
    opnd, bk, ins = view.operands[lane], view.bk, view.ins

    def body(ctx, outs):
        (f,) = outs
        one = ctx.one
        bv = [ctx.v01(opnd, B + k) for k in range(LANE_BITS)]
        cv = [ctx.v01(opnd, C + k) for k in range(LANE_BITS)]
        s = [ctx.v01(opnd, SEG + k) for k in range(LANE_BITS)]
        mask = [ctx.v01(bk.cur_mask, j) for j in range(LANES)]
        op = {name: ctx.v01(ins.op(name)) for name in SHFL}
        le = plus(op["shfl.down"], op["shfl.bfly"], op["shfl.idx"])

        def cond(lits, out, form=None, t=None):
            """out += 2 [every literal is 1 and form >= t] (form: sum of the literals)."""
            if form is None:
                ctx.step(plus(*lits), len(lits), true_bit(out))
            else:
                ctx.step(form, t, true_bit(out), when=lits)

        def eq(value):
            return [_lit(bv[k], value >> k & 1, one) for k in range(LANE_BITS)]

        ballot = ctx.v01(ins.op("ballot"))
        for m in range(LANES):  # ballot: lane m active and its a != 0
            ctx.step(ctx.sum01(view.operands[m], range(32)), 1, true_bit(f[BALLOT + m]),
                     when=[ballot, mask[m]], big=64.0)
        for term in _or_of_and_not(cv[2:], s[2:], one):  # G: max_lane >= 4
            cond(term + [le], f[G_LE])
            if lane > 0:  # lane 0 has no up source, G_up is never read
                cond(term + [op["shfl.up"]], f[G_UP])
        for term in _or_of_and_not(bv[2:], s[2:], one):  # idx's j >= 4
            cond(term + [op["shfl.idx"]], f[HB])

        def low_bound(sig):
            """(literals fixing s0, s1, the form 2 m1 + m0) for the 4 cases of s0, s1."""
            for s0 in (0, 1):
                for s1 in (0, 1):
                    m = [{one: float(lane >> k & 1)} if sk else cv[k]
                         for k, sk in enumerate((s0, s1))]
                    yield (s0, s1), [_lit(s[0], s0, one), _lit(s[1], s1, one)], \
                        scaled(plus(scaled(m[1], 2.0), m[0]), sig)

        for j in range(LANES):
            if j == lane:
                continue
            sources = [(op["shfl.bfly"], eq(lane ^ j))]  # (mode literal, source literals)
            if j > lane:
                sources.append((op["shfl.down"], eq(j - lane)))
            for mode, lits in sources:
                cond([mode, mask[j], *lits], f[X + j])
                for _, fix, form in low_bound(1.0):
                    cond([mode, mask[j], *lits, *fix], f[Y + j], form, j)
            # idx: bits k < 2 of j are L_k where s_k is set, else b_k
            fixed = [k for k in range(2) if lane >> k & 1 != j >> k & 1]
            free = [k for k in range(2) if k not in fixed]
            lits = [op["shfl.idx"], mask[j]]
            for k in fixed:
                lits += [_lit(s[k], 0, one), _lit(bv[k], j >> k & 1, one)]
            if free:
                (k,) = free
                cond(lits, f[X + j], plus(s[k], _lit(bv[k], j >> k & 1, one)), 1)
            else:
                cond(lits, f[X + j])
            for sk, fix, form in low_bound(1.0):
                if any(sk[k] for k in fixed):
                    continue
                extra = [_lit(bv[k], j >> k & 1, one) for k in free if not sk[k]]
                cond(lits + fix + extra, f[Y + j], form, j)
            if j < lane:
                lits = [op["shfl.up"], mask[j], *eq(lane - j)]
                for _, fix, form in low_bound(-1.0):
                    cond(lits + fix, f[Z + j], form, -j)

    others = [view.operands[j] for j in range(LANES) if j != lane]
    (out,) = unit(view.c, f"warp.{ins.position}.{lane}", [opnd, *others, bk.cur_mask, ins.ops],
                  [(f"warp.{ins.position}.{lane}", BITS, FLAGS)], body)
    return out


def high(view: StageView, lane: int, fl) -> HighBody:
    """The high MLP's part: the shuffle's source select and the ballot."""
    ins = view.ins

    def body(ctx, r):
        def a(j, i):
            return ctx.v01(view.operands[j], i)

        def v(k):
            return ctx.v01(fl, k)

        others = [j for j in range(LANES) if j != lane]
        g_le, g_up, hb = v(G_LE), v(G_UP), v(HB)
        shfl = plus(*(ctx.v01(ins.op(name)) for name in SHFL))
        own = plus(scaled(g_le, -1.0), scaled(hb, 3.0), g_up,
                   *(plus(scaled(v(X + j), -1.0), scaled(v(Y + j), -2.0),
                          scaled(v(Z + j), -2.0)) for j in others))
        take = {j: plus(g_le, v(X + j), v(Y + j), scaled(hb, -3.0), scaled(v(Z + j), 2.0),
                        scaled(g_up, -1.0)) for j in others}
        for i in range(32):
            ctx.step(own, -1, true_bit(r[i]), when=[a(lane, i), shfl], big=8.0)
            for j in others:
                ctx.step(take[j], 2, true_bit(r[i]), when=[a(j, i)], big=8.0)
        for m in range(LANES):
            ctx.linear(v(BALLOT + m), true_bit(r[m]))

    return body


def build(view: StageView, lane: int) -> Extension | None:

    if not view.ins.has("ballot"):  # not compiled into this machine (MachineSpec.ops)
        return None
    fl = flags(view, lane)
    others = [view.operands[j] for j in range(LANES) if j != lane]
    return Extension(inputs=[fl, *others], high=high(view, lane, fl))
