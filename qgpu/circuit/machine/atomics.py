"""machine.atomics: the atomics of one warp on global and shared memory (atom.{global,
shared}.add, exch, and, or, xor here; min/max .s/.u and cas in machine.atomics_order).

The interpreter applies an atomic lane by lane in lane order: lane L gets the word as the
lower active lanes with the same word left it (`old`, its result) and leaves f(old, b)
(`new`); the block's record for a word carries the value after its last lane. So, with
M the word before the operation:
- add: old_L = M + the b of the lower active lanes with L's word, new_L = old_L + b_L;
- exch: old_L = b of the highest such lane, else M; new_L = b_L;
- and / or / xor: M combined with those lanes' b (new_L: b_L too).
M is linear in the read of the memory table (machine.memory: one table for both spaces,
alu_low's word names the flat row): bit i = (raw_i + presence) / 2, so one formula serves
both spaces. Units per instruction position p (the word and the read are alu_low's and
machine.memory's, for every addressed operation):
- `atom.pairs.p` (beside alu_low, from the operands): e[L, h] = lane h < L is active and
  its address's low 16 bits equal lane L's (the same word for any access the interpreter
  does not fault on: both are aligned and inside memory), and g[L, i] = the number of
  lanes h < L with e[L, h] and bit i of h's b set (two steps per h: [d >= 0] - [d >= 1]
  on the exact difference, gated, also by the atomic op bits), a count 0..3 held as one
  RAW dim (count * 2^-44): 96 dims per position, where one +-1 bit per (L, h, i) took 192;
- `atom.low.p.L` (after the memory read): old's bits, except that add's high half is
  (M + X)'s high columns without the low half's carry: exch, and, or, xor straight from M,
  e, g and the lower lanes' b; add's halves by sawtooth steps on exact column sums (up to
  4 terms); the low half's carry as thermometer bits; new's low half and carry likewise;
  min / max / cas: M (one gated unit a bit; atomics_order's alu_high steps add the
  picked value minus M);
- in alu_high (this family's Extension, `finish`): old's low half passed on, each high bit
  by sawtooth steps on carry + the high bits (< 2^16 + 4, two steps a bit from bit 18),
  and atomics_order's picks;
- `atom.new.p.L`, made after the lane's result (so it stays out of alu_high's MLP): new's
  bits, the value the store records (`memory.store_records`, its `atomic` values; bit 7
  of a shared-space record's address is set there) carry for the word's last lane.
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS, RAW
from qgpu.circuit.machine import atomics_order as order
from qgpu.circuit.machine.bookkeeping import LANES
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.logic import WIDE, gated, true_bit, unit
from qgpu.circuit.machine.spec import ATOMIC_OPS
from qgpu.primitives import plus, scaled

LO = 16
BIG = 2.0 ** 20  # gating weight: exceeds every column sum here (< 5 * 2^16)
UNIT = 2.0 ** -44  # the RAW value of a count of 1 (atom.gated's column counts)
PAIRS = [(lane, h) for lane in range(LANES) for h in range(lane)]  # (lane, lower lane)
ADD, EXCH, AND, OR, XOR = "add", "exch", "and", "or", "xor"
en = order.en  # en(ctx, ins, *fns): 0/1, the position holds atom.<either space>.<one of fns>


def _pair(lane: int, h: int) -> int:
    return PAIRS.index((lane, h))


def pairs(view: StageView):
    """(e, g) of position view.ins (made once per position)."""
    key = ("atom.pairs", view.ins.position)
    if key in view.extra:
        return view.extra[key]
    opnd, bk = view.operands, view.bk

    def body(ctx, outs):
        e, g = outs
        atomic = plus(*(ctx.v01(view.ins.op(n)) for n in ATOMIC_OPS if view.ins.has(n)))
        for k, (lane, h) in enumerate(PAIRS):
            d = plus(ctx.num(opnd[lane], 0, LO), scaled(ctx.num(opnd[h], 0, LO), -1))
            act = ctx.v01(bk.cur_mask, h)
            ctx.step(d, 0, true_bit(e[k]), when=[act], big=WIDE)
            ctx.step(d, 1, {e[k]: -2.0}, when=[act], big=WIDE)
            for i in range(32):  # (0 unless the op is an atomic, as multiply's sums)
                when = [act, ctx.v01(opnd[h], 32 + i), atomic]
                ctx.step(d, 0, {g[32 * (lane - 1) + i]: UNIT}, when=when, big=WIDE)
                ctx.step(d, 1, {g[32 * (lane - 1) + i]: -UNIT}, when=when, big=WIDE)

    p = view.ins.position
    view.extra[key] = unit(view.c, f"atom.pairs.{p}", [*opnd.values(), bk.cur_mask, view.ins.ops],
                           [(f"atom.same.{p}", BITS, len(PAIRS)),
                            (f"atom.gated.{p}", RAW, 32 * (LANES - 1), UNIT * LANES)], body)
    return view.extra[key]


class Word:
    """Forms over one lane's inputs: M's bits, the lower lanes' e and g, the lane's b."""

    def __init__(self, ctx, lane, raws, e, g, b):
        self.ctx, self.lane, self.raws, self.e, self.g, self.b = ctx, lane, raws, e, g, b

    def m(self, i: int):
        return order.m_bit(self.ctx, self.raws, i)

    def same(self, h: int):
        return self.ctx.v01(self.e, _pair(self.lane, h))

    def gated(self, i: int):
        """The number of lower same-word lanes whose b has bit i set (g's RAW count)."""
        if not self.lane:
            return {}
        return {self.ctx.d(self.g)[32 * (self.lane - 1) + i]: 1.0 / UNIT}

    def column(self, i: int, own: bool):
        """M_i + the lower same-word lanes' b_i (+ this lane's b_i when own)."""
        parts = [self.m(i), self.gated(i)]
        if own:
            parts.append(self.ctx.v01(self.b, i))
        return plus(*parts)

    def terms(self, own: bool) -> int:
        return 1 + self.lane + (1 if own else 0)


def _sawtooth(ctx, s, terms, unit_value, out, en):
    """out += 2 * (bit of floor(s / unit_value) mod 2) - (its -1 start is the unit's):
    s < terms * 2 * unit_value."""
    for k in range(1, 2 * terms):
        ctx.step(s, k * unit_value, {out: 2.0 if k % 2 else -2.0}, when=[en], big=BIG)


def _add_low(ctx, w: Word, own: bool, out, carry, en) -> None:
    """add: bits 0..15 of M + X (+ b) into out[0:16], the carry into the high half as
    thermometer bits carry[u - 1] = [low sum >= u * 2^16]."""
    s = {}
    for j in range(LO):
        s = plus(s, scaled(w.column(j, own), 2.0 ** j))
        _sawtooth(ctx, s, w.terms(own), 2.0 ** j, out[j], en)
    for u in range(1, w.terms(own)):
        ctx.step(s, u * 2.0 ** LO, true_bit(carry[u - 1]), when=[en], big=BIG)


def _add_high(ctx, w: Word, own: bool, out, carry_form, en) -> None:
    """add: bits 16..31 of the high columns plus carry_form (a linear form; {}: none)."""
    t = carry_form
    for j in range(LO, 32):
        t = plus(t, scaled(w.column(j, own), 2.0 ** (j - LO)))
        _sawtooth(ctx, t, w.terms(own), 2.0 ** (j - LO), out[j], en)


def _logic(ctx, ins, w: Word, lower_b: dict, own: bool, out, b_wins=None) -> None:
    """exch, and, or, xor: old (own False) or new (own True) into the bits out. b_wins:
    a 0/1 form (exclusive with exch) for which new is b too (min / max: b beats old)."""
    def en_(name):
        return en(ctx, ins, name)

    lower = range(w.lane)
    for i in range(32):
        if own:
            takes_b = plus(en_(EXCH), b_wins) if b_wins else en_(EXCH)
            ctx.step(ctx.v01(w.b, i), 1, true_bit(out[i]), when=[takes_b])
        else:
            ctx.step(plus(w.m(i), *(scaled(w.same(h), -1) for h in lower)), 1,
                     true_bit(out[i]), when=[en_(EXCH)])
            for h in lower:
                ctx.step(plus(w.same(h), ctx.v01(lower_b[h], i),
                              *(scaled(w.same(k), -1) for k in range(h + 1, w.lane))), 2,
                         true_bit(out[i]), when=[en_(EXCH)])
        col = w.column(i, own)
        ctx.step(col, 1, true_bit(out[i]), when=[en_(OR)])
        unset = plus(*(w.same(h) for h in lower), scaled(w.gated(i), -1))
        both = plus(w.m(i), ctx.v01(w.b, i)) if own else w.m(i)
        ctx.step(plus(both, scaled(unset, -1)) if unset else both, 2 if own else 1,
                 true_bit(out[i]), when=[en_(AND)])
        for k in range(1, w.terms(own) + 1):
            ctx.step(col, k, {out[i]: 2.0 if k % 2 else -2.0}, when=[en_(XOR)], big=16.0)


def low_unit(view: StageView, lane: int, e, g):
    """After the memory read: old's bits (add: the high half without the low half's carry,
    which is `carry`; min/max/cas: M, which alu_high's order steps correct), and new's low
    half and carry (for atom.new)."""
    ins, raws = view.ins, order.reads(view, lane)
    b = view.operands[lane][32:64]
    lower_b = {h: view.operands[h][32:64] for h in range(lane)}

    def body(ctx, outs):
        old, carry, new_lo, new_carry = outs
        w = Word(ctx, lane, raws, e, g, b)
        add = en(ctx, ins, ADD)
        _add_low(ctx, w, False, old, carry, add)
        _add_high(ctx, w, False, old, {}, add)
        _logic(ctx, ins, w, lower_b, False, old)
        _add_low(ctx, w, True, new_lo, new_carry, add)
        sel = en(ctx, ins, *order.SELECT)
        for i in range(32):
            gated(ctx, sel, 1, w.m(i), {old[i]: 2.0})

    p = ins.position
    return unit(view.c, f"atom.low.{p}.{lane}", [e, g, *raws, b, *lower_b.values(), ins.ops],
                [(f"atom.old.{p}.{lane}", BITS, 32), (f"atom.carry.{p}.{lane}", BITS, LANES),
                 (f"atom.new_lo.{p}.{lane}", BITS, LO),
                 (f"atom.new_carry.{p}.{lane}", BITS, LANES)], body)


def finish(ctx, r, value, carry, n: int) -> None:
    """r += value + the carry count (carry: n thermometer bits) into bit 16: the low half
    passed on, each high bit j by sawtooth steps on the exact t = carry + value's bits
    16..j (< 2^16 + 4: two steps a bit from bit 18 on; no gating: value and carry are 0
    for every other operation)."""
    for i in range(LO if n else 32):
        ctx.linear(ctx.v01(value, i), {r[i]: 2.0})
    if not n:
        return
    t = ctx.sum01(carry, range(n))
    for j in range(LO, 32):
        t = plus(t, scaled(ctx.v01(value, j), 2.0 ** (j - LO)))
        top = (2 ** (j - LO + 1) - 1 + n) // 2 ** (j - LO)  # floor(t / 2^(j-16)) <= top
        for k in range(1, top + 1):
            ctx.step(t, k * 2.0 ** (j - LO), {r[j]: 2.0 if k % 2 else -2.0})


def build(view: StageView, lane: int) -> Extension | None:
    if not view.ins.has(*ATOMIC_OPS):
        return None
    ins, raws = view.ins, order.reads(view, lane)
    e, g = pairs(view)
    old, carry, new_lo, new_carry = low_unit(view, lane, e, g)
    b = view.operands[lane][32:64]
    p = ins.position
    ordered = order.build(view, lane, e, raws)

    def new(result):
        """The word after this lane's atomic, made after the lane's result (the unit waits
        for it, out of alu_high's crowded MLP): new's low half and carry from atom.low,
        its high half, exch / and / or / xor; min / max / cas from the result (old) and
        atomics_order.nxt's bits (b beats old, cas succeeds)."""
        nx = view.extra[("atom.next", p, lane)]()

        def body(ctx, outs):
            (r,) = outs
            w = Word(ctx, lane, raws, e, g, b)
            for i in range(LO):
                ctx.linear(ctx.v01(new_lo, i), {r[i]: 2.0})
            _add_high(ctx, w, True, r, ctx.sum01(new_carry, range(w.terms(True) - 1)),
                      en(ctx, ins, ADD))
            _logic(ctx, ins, w, {}, True, r, b_wins=ctx.v01(nx, order.B_WINS))
            order.new_steps(ctx, view, lane, result, nx, r)

        (value,) = unit(view.c, f"atom.new.{p}.{lane}",
                        [e, g, new_lo, new_carry, *raws, b, ins.ops, result, nx,
                         view.operands[lane]],
                        [(f"atom.new.{p}.{lane}", BITS, 32)], body)
        return value

    view.extra.setdefault("record_values", {})[(p, lane)] = new

    def high(ctx, r):
        finish(ctx, r, old, carry, lane)  # lane L's old: a carry of at most L
        ordered.high(ctx, r)

    return Extension([old, carry, *ordered.inputs], high)
