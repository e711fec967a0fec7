"""machine.atomics_order: the atomics that compare words (atom.{global,shared}.min.s,
min.u, max.s, max.u, cas) of one warp, in the layers the other atomics take.

Lanes apply the operation in lane order; lane L's result (old) is the word as the lower
active lanes with its word left it. With M the word before the operation (the memory
table's read, either space: m_bit) and "x beats y" = x > y (max) or x < y
(min), signed or unsigned:
- min / max: old_L = M unless a lower same-word lane's b beats M and every other one: then
  the first of the best b's (M first among equals);
- cas: old_L = M until the first same-word lane j0 with b_j0 == M (then no lower
  same-word lane has b == b_j0); the word becomes c_j0, and each later same-word lane j
  with b_j == the word replaces it with c_j.
A comparison of x and y is two MLPs (32-bit differences are not exact in fp32): level 1
bits P1 = [x's high half beats y's] (signed or unsigned per op), T = [high halves equal],
P2 = [x's low half beats y's], EL = [low halves equal] (cas); x beats y = P1 or (T and
P2), x == y = T and EL. Units per position p:
- `atom.bb.early.p` (from the operands, beside alu_low): level 1 of b_h vs b_k and c_k vs
  b_h for the pairs k < h < 3;
- `atom.order.early.p` (next MLP, from those and atom.pairs' e[L, h] = lane h < L is
  active with L's word): W[h, k] = lane k (same word, active) keeps b_h from being the
  pick (k < h: b_h does not beat b_k; k > h: b_k beats b_h); eBE[L, j, j0] = e[L, j] and
  b_j == b_j0; eEC[L, k, j] = e[L, j] and c_k == b_j (k < j < L);
- `atom.cmp.p.L` (after the memory read, beside atom.low): level 1 of b_L vs M_L (when
  e[L, h], M_L = M_h, so lane h's bits serve lane L);
- in alu_high (`Order.high`): atom.low's old is M for these ops, and gated units add
  (x - M) per bit for the picked x: min/max b_h when e[L, h], no W[h, k] (k < L) and b_h
  beats M (two units: P1, or T and P2); cas c_k for each path: first success j0 (e, T,
  EL of lane j0, no eBE[L, j, j0]), then the successes and failures of the later lanes
  (eEC bits) up to the last success k: 2^(L-1-j0) paths per j0. Units per lane L:
  32 * (2L + 2^L - 1): 0, 96, 224, 416;
- made after alu_high (so they never crowd its layers), for the record's value:
  `atom.bb.late.p`, `atom.order.late.p` (the pairs with lane 3, W[L, h], eBE / eEC of the
  lane's own b) and `atom.next.p.L`: b_L beats old_L (beats M, no W[L, h]) and cas's
  success (old_L == b_L: the paths above ending in lane L's success); atom.new then
  takes b (through exch's step), c, or keeps old.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.ir import BITS, READ_SCALE
from qgpu.circuit.machine.bookkeeping import LANES
from qgpu.circuit.machine.families import StageView
from qgpu.circuit.machine.logic import WIDE, gated, true_bit, unit
from qgpu.primitives import plus, scaled

LO = 16
SPACES = ("global", "shared")
MM = {"min.s": (True, -1.0), "max.s": (True, 1.0), "min.u": (False, -1.0),
      "max.u": (False, 1.0)}  # fn: (signed, +1 for max / -1 for min)
SELECT = (*MM, "cas")  # the ops whose old atom.low sets to M
P1, T, P2, EL = range(4)  # level-1 bits of a comparison
PAIRS = [(lane, h) for lane in range(LANES) for h in range(lane)]  # machine.atomics' e


def m_bit(ctx, raws, i: int):
    """Bit i of M, linear: the sum over the reads of (raw_i + presence) / 2 (an unwritten
    word reads 0 and 0)."""
    out = {}
    for raw in raws:
        ds = ctx.d(raw)
        out = plus(out, {ds[i]: 0.5 / READ_SCALE, ds[32]: 0.5 / READ_SCALE})
    return out


def reads(view: StageView, lane: int) -> list:
    """The raw reads whose sum is lane's word M: the memory table's read (either space)."""
    return [view.loaded[lane]]


BB = 6  # bb bits per pair: P1, T, P2, EL (b_h vs b_k), then T, EL of c_k vs b_h
CT, CEL = 4, 5
B_WINS, CAS_OK = 0, 1  # atom.next's bits
TOP = LANES - 1
# "early" bits feed alu_high (pairs among lanes 0..2: alu_high of lane L uses lanes < L);
# "late" ones only atom.next (made after alu_high, so they never crowd its layers)
BB_PAIRS = {"early": [(h, k) for h in range(TOP) for k in range(h)],
            "late": [(TOP, k) for k in range(TOP)]}
ORDER_KEYS = {
    "early": [("W", h, k) for h in range(TOP) for k in range(TOP) if h != k]
    + [(kind, lane, a, b) for kind in ("BE", "EC") for lane in range(LANES)
       for b in range(lane) for a in range(b)],
    "late": [("W", lane, h) for lane in range(LANES) for h in range(lane)]
    + [(kind, lane, a, lane) for kind in ("BE", "EC") for lane in range(LANES)
       for a in range(lane)]}


def en(ctx, ins, *fns):
    """0/1 form: the position holds atom.<either space>.<one of fns> (0 when none is in)."""
    parts = [ctx.v01(ins.op(f"atom.{sp}.{fn}")) for fn in fns for sp in SPACES
             if ins.has(f"atom.{sp}.{fn}")]
    return plus(*parts) if parts else ctx.const(0)


def _eq(ctx, d, dim, when) -> None:
    ctx.step(d, 0, true_bit(dim), when=[when], big=WIDE)
    ctx.step(d, 1, {dim: -2.0}, when=[when], big=WIDE)


def compare(ctx, ins, out: dict, x, y) -> None:
    """Level-1 bits of x vs y into out (level-1 index -> dim; only those present): x, y:
    (lo, hi, signed) -> the integer form of those bits. P1, P2 gated by the min/max ops,
    T by min/max and cas, EL by cas (each -1 otherwise)."""
    def d(lo, hi, signed=False):
        return plus(x(lo, hi, signed), scaled(y(lo, hi, signed), -1))

    if P1 in out:
        for fn, (signed, sense) in MM.items():
            ctx.step(scaled(d(LO, 32, signed), sense), 1, true_bit(out[P1]),
                     when=[en(ctx, ins, fn)], big=WIDE)
    if P2 in out:
        for sense in (1.0, -1.0):
            fns = [fn for fn, (_, s) in MM.items() if s == sense]
            ctx.step(scaled(d(0, LO), sense), 1, true_bit(out[P2]),
                     when=[en(ctx, ins, *fns)], big=WIDE)
    if T in out:
        _eq(ctx, d(LO, 32), out[T], en(ctx, ins, *SELECT))
    if EL in out:
        _eq(ctx, d(0, LO), out[EL], en(ctx, ins, "cas"))


def _bits(ctx, ref, offset=0):
    return lambda lo, hi, signed: ctx.num(ref[offset:offset + 32], lo, hi, signed)


def _m_num(ctx, raws):
    def num(lo, hi, signed):
        form = {}
        for k, i in enumerate(range(lo, hi)):
            w = -(2.0 ** k) if signed and i == hi - 1 else 2.0 ** k
            form = plus(form, scaled(m_bit(ctx, raws, i), w))
        return form
    return num


def bb(view: StageView, part: str):
    """Level 1 of b_h vs b_k and c_k vs b_h for the part's pairs k < h (once per position)."""
    p, ins, opnd = view.ins.position, view.ins, view.operands
    key = ("atom.bb", part, p)
    if key not in view.extra:
        pairs = BB_PAIRS[part]
        lanes = sorted({x for pair in pairs for x in pair})

        def body(ctx, outs):
            (o,) = outs
            for q, (h, k) in enumerate(pairs):
                at = BB * q
                compare(ctx, ins, {P1: o[at], T: o[at + 1], P2: o[at + 2], EL: o[at + 3]},
                        _bits(ctx, opnd[h], 32), _bits(ctx, opnd[k], 32))
                compare(ctx, ins, {T: o[at + CT], EL: o[at + CEL]}, _bits(ctx, opnd[k], 64),
                        _bits(ctx, opnd[h], 32))

        (view.extra[key],) = unit(view.c, f"atom.bb.{part}.{p}",
                                  [*(opnd[x] for x in lanes), ins.ops],
                                  [(f"atom.bb.{part}.{p}", BITS, BB * len(pairs))], body)
    return view.extra[key]


def order_bits(view: StageView, e, part: str):
    """The part's W[h, k], eBE[L, j, j0], eEC[L, k, j] bits (ORDER_KEYS) of the position."""
    p, bk = view.ins.position, view.bk
    key = ("atom.order", part, p)
    if key in view.extra:
        return view.extra[key]
    parts = ["early"] if part == "early" else ["early", "late"]
    sigs = {q: bb(view, q) for q in parts}

    def body(ctx, outs):
        (o,) = outs

        def b(h, k, bit):  # bb bit of pair (h, k), h > k
            q = next(q for q in parts if (h, k) in BB_PAIRS[q])
            return ctx.v01(sigs[q], BB * BB_PAIRS[q].index((h, k)) + bit)

        def same(lane, h):
            return ctx.v01(e, PAIRS.index((lane, h)))

        for n, (kind, *rest) in enumerate(ORDER_KEYS[part]):
            if kind == "W" and rest[1] < rest[0]:  # b_h does not beat b_k (k comes first)
                h, k = rest
                form = plus(scaled(same(h, k), 2), scaled(b(h, k, P1), -2),
                            scaled(b(h, k, T), -1), scaled(b(h, k, P2), -1))
                ctx.step(form, 1, true_bit(o[n]))
            elif kind == "W":  # lane k (> h) is active with h's word and b_k beats b_h
                h, k = rest
                form = plus(scaled(ctx.v01(bk.cur_mask, k), 2), scaled(same(k, h), 2),
                            scaled(b(k, h, P1), 2), b(k, h, T), b(k, h, P2))
                ctx.step(form, 6, true_bit(o[n]))
            elif kind == "BE":  # e[L, a] and b_a == b_c
                lane, a, c = rest
                ctx.step(plus(same(lane, a), b(c, a, T), b(c, a, EL)), 3, true_bit(o[n]))
            elif rest[2] < rest[0]:  # EC: e[L, c] and c_a == b_c
                lane, a, c = rest
                ctx.step(plus(same(lane, c), b(c, a, CT), b(c, a, CEL)), 3, true_bit(o[n]))
            else:  # EC of the lane's own b: c_a == b_L
                lane, a, c = rest
                ctx.step(plus(b(c, a, CT), b(c, a, CEL)), 2, true_bit(o[n]))

    (view.extra[key],) = unit(view.c, f"atom.order.{part}.{p}", [e, *sigs.values(), bk.cur_mask],
                              [(f"atom.order.{part}.{p}", BITS, len(ORDER_KEYS[part]))], body)
    return view.extra[key]


def order_bit(ctx, obs: dict, key):
    """0/1 form of an order bit (from the first part of obs that has it)."""
    part = next(q for q in obs if key in ORDER_KEYS[q])
    return ctx.v01(obs[part], ORDER_KEYS[part].index(key))


def cmp(view: StageView, lane: int, raws):
    """Level 1 of b_lane vs M_lane (after the memory read)."""
    p, ins = view.ins.position, view.ins
    key = ("atom.cmp", p, lane)
    if key not in view.extra:
        b = view.operands[lane]

        def body(ctx, outs):
            (o,) = outs
            compare(ctx, ins, dict(enumerate(o)), _bits(ctx, b, 32), _m_num(ctx, raws))

        (view.extra[key],) = unit(view.c, f"atom.cmp.{p}.{lane}", [b, *raws, ins.ops],
                                  [(f"atom.cmp.{p}.{lane}", BITS, 4)], body)
    return view.extra[key]


def nxt(view: StageView, lane: int, cmps, obs: dict, e):
    """After alu_high (level 2 of the lane's own comparison with M): b_lane beats old_lane
    (it beats M and no W[lane, h], h < lane) and cas's success [old_lane == b_lane] (no
    lower success and b_lane == M, or the chain's paths to the last success k and c_k ==
    b_lane), for atom.new."""
    p = view.ins.position

    def body(ctx, outs):
        (o,) = outs
        own = cmps[lane]
        w = [order_bit(ctx, obs, ("W", lane, h)) for h in range(lane)]
        ctx.step(plus(scaled(ctx.v01(own, P1), 2), ctx.v01(own, T), ctx.v01(own, P2),
                      *(scaled(x, -4) for x in w)), 2, true_bit(o[B_WINS]))
        for j0, succ, fail, k in cas_paths(lane + 1):
            if k != lane:  # the lane itself must succeed
                continue
            parts = [ctx.v01(cmps[j0], T), ctx.v01(cmps[j0], EL)]
            parts += [scaled(order_bit(ctx, obs, ("BE", lane, j, j0)), -1) for j in range(j0)]
            if j0 < lane:
                parts.append(ctx.v01(e, PAIRS.index((lane, j0))))
            parts += [order_bit(ctx, obs, ("EC", lane, s_, j)) for s_, j in succ]
            parts += [scaled(order_bit(ctx, obs, ("EC", lane, s_, j)), -1) for s_, j in fail]
            on = len(succ) + (3 if j0 < lane else 2)
            ctx.step(plus(*parts), on, true_bit(o[CAS_OK]))

    (out,) = unit(view.c, f"atom.next.{p}.{lane}", [*cmps, *obs.values(), e],
                  [(f"atom.next.{p}.{lane}", BITS, 2)], body)
    return out


def new_steps(ctx, view: StageView, lane: int, result, nx, r) -> None:
    """atom.new's part: the word after lane's min / max / cas (old = the result): old unless
    b wins (machine.atomics' exch step adds b then) or cas succeeds (then c)."""
    sel = en(ctx, view.ins, *SELECT)
    keep = plus(sel, scaled(ctx.v01(nx, B_WINS), -1), scaled(ctx.v01(nx, CAS_OK), -1))
    for i in range(32):
        gated(ctx, keep, 1, ctx.v01(result, i), {r[i]: 2.0})
        gated(ctx, ctx.v01(nx, CAS_OK), 1, ctx.v01(view.operands[lane], 64 + i), {r[i]: 2.0})


def cas_paths(lane: int):
    """(j0, successes [(state, j)], failures [(state, j)], k) for each way the cas chain
    below lane can run from its first success j0 to its last success k."""
    out = []
    for j0 in range(lane):
        later = list(range(j0 + 1, lane))
        for mask in range(1 << len(later)):
            state, succ, fail = j0, [], []
            for t, j in enumerate(later):
                if mask >> t & 1:
                    succ.append((state, j))
                    state = j
                else:
                    fail.append((state, j))
            out.append((j0, succ, fail, state))
    return out


@dataclass
class Order:
    inputs: list
    high: object


def build(view: StageView, lane: int, e, raws) -> Order:
    """The family's units for lane and what alu_high adds (atom.low's old holds M)."""
    obs = {"early": order_bits(view, e, "early")} if lane else {}
    cmps = [cmp(view, h, reads(view, h)) for h in range(lane)]
    opnd = view.operands

    def make_next():  # called from atom.new's maker: created (so scheduled) after alu_high
        return nxt(view, lane, [*cmps, cmp(view, lane, raws)],
                   {"early": order_bits(view, e, "early"),
                    "late": order_bits(view, e, "late")}, e)

    view.extra[("atom.next", view.ins.position, lane)] = make_next

    def high(ctx, r):
        def same(h):
            return ctx.v01(e, PAIRS.index((lane, h)))

        for i in range(32):
            m = m_bit(ctx, raws, i)
            for h in range(lane):  # min / max: b_h
                up = plus(ctx.v01(opnd[h], 32 + i), scaled(m, -1))
                w = [order_bit(ctx, obs, ("W", h, k)) for k in range(lane) if k != h]
                base = plus(same(h), scaled(plus(*w), -1)) if w else same(h)
                gated(ctx, plus(base, ctx.v01(cmps[h], P1)), 2, up, {r[i]: 2.0})
                gated(ctx, plus(base, ctx.v01(cmps[h], T), ctx.v01(cmps[h], P2)), 3, up,
                      {r[i]: 2.0})
            for j0, succ, fail, k in cas_paths(lane):  # cas: c_k
                parts = [same(j0), ctx.v01(cmps[j0], T), ctx.v01(cmps[j0], EL)]
                parts += [scaled(order_bit(ctx, obs, ("BE", lane, j, j0)), -1)
                          for j in range(j0)]
                parts += [order_bit(ctx, obs, ("EC", lane, s, j)) for s, j in succ]
                parts += [scaled(order_bit(ctx, obs, ("EC", lane, s, j)), -1) for s, j in fail]
                up = plus(ctx.v01(opnd[k], 64 + i), scaled(m, -1))
                gated(ctx, plus(*parts), 3 + len(succ), up, {r[i]: 2.0})

    inputs = [e, *obs.values(), *cmps, *(opnd[h] for h in range(lane)), *raws]
    return Order(inputs, high)
