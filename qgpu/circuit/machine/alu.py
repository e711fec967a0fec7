"""machine.alu: one instruction position of one lane, as three units in three MLPs.

- `operands`: a, b, c (32 bits each) = register-file read + immediate + forwarded result
  of an earlier stage (at most one of them is non-zero: a selector names one source, a
  register read with a none query and an immediate row never written both read 0); the
  forwarded part is a product selector x result bit, exact;
- `alu_low`: the low halves of add and sub (16-bit adders, sawtooth steps on exact
  partial sums, carries out), the unsigned comparison of the low halves, `c != 0`;
- `alu_high`: every result bit: the low halves passed on, the high halves of add/sub
  with the carry in, and, or, xor, mov, selp, the comparisons (high halves decide,
  the low comparison breaks ties: [D_hi + ge_lo >= 1] is A >= B), special registers,
  loaded words, brev (a permutation), popc and clz (sawtooth bits of a count: the set
  bits of a, or the low MLP's count of n = 1..32 with the top n bits 0, held as one RAW
  dim per lane: count * 2^-44, exact, instead of a 32-bit thermometer).
Every family is gated by its operation bit inside its steps (a disabled family adds
exactly 0), so the families write the same result dims and the result is exactly one
family's value.
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS, RAW, READ_SCALE, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import Bookkeeping
from qgpu.circuit.machine.logic import WIDE, gated, true_bit, unit
from qgpu.circuit.machine.rom import Instruction
from qgpu.circuit.machine.spec import ADDRESSED_OPS
from qgpu.isa import limits
from qgpu.primitives import plus, scaled

LO = 16
OPERANDS_READY = 96  # operands' always-on bit
# alu_low's output bits, which alu_high reads
ADD_LO, ADD_CARRY = 0, 16  # add: bits 0..15 of a + b, the carry out of bit 15
SUB_LO, SUB_CARRY = 17, 33  # sub: bits 0..15 of a - b, the carry out of bit 15
GE_LO, LE_LO, EQ_LO = 34, 35, 36  # the low halves of a and b compared (unsigned)
C_NONZERO = 37  # selp: c != 0
READY = 38  # always on
LOW_BITS = 39
CLZ_UNIT = 2.0 ** -44  # clz's count: a RAW dim holding (leading zeros) * CLZ_UNIT
WORD_ADDRESS_BITS = 7  # the word signal: the word's 7 bits, then valid (a memory op in range),
WORD_SPACE = WORD_ADDRESS_BITS + 1  # then the space bit (+1: shared; the flat row's bit 7)


def operands(c: Circuit, ins: Instruction, lane: int, regs: list, earlier: list) -> Signal:
    """a | b | c as 96 bits, then an always-on bit (the next stage's immediates gate on
    it, so their reads come one layer before that stage needs them). regs: per operand
    the register read; earlier: the results (this lane) of the positions ins.forwards
    index."""
    p = ins.position
    args = [*regs, *ins.imms] + [f for f in ins.forwards if f is not None] + list(earlier)

    def body(ctx, outs):
        (out,) = outs
        for j in range(3):
            for i in range(32):
                d = out[32 * j + i]
                ctx.linear(plus(ctx.v01(regs[j], i), ctx.v01(ins.imms[j], i)), {d: 2.0})
                for k, res in enumerate(earlier):
                    ctx.product(ctx.v01(ins.forwards[j], k), {ctx.d(res)[i]: 0.5,
                                                              ctx.one: 0.5}, {d: 2.0})
        ctx.constant({out[96]: 2.0})

    (out,) = unit(c, f"operands.{p}.{lane}", args, [(f"operands.{p}.{lane}", BITS, 97)], body)
    return out


def _adder_low(ctx, a, b_form, carry_in: float, out, carry, en):
    """Bits 0..15 of a + b (+ carry_in) into out, the carry into `carry`, gated by en."""
    for j in range(LO):
        s = plus(*(scaled(plus(ctx.v01(a, i), b_form(i)), 2.0 ** i) for i in range(j + 1)),
                 ctx.const(carry_in))
        for k, sign in ((1, 2.0), (2, -2.0), (3, 2.0)):
            ctx.step(s, k * 2 ** j, {out[j]: sign}, when=[en], big=WIDE)
        if j == LO - 1:
            ctx.step(s, 2 ** LO, {carry: 2.0}, when=[en], big=WIDE)


def shared_base(c: Circuit, ins: Instruction, bk: Bookkeeping) -> Signal | None:
    """The current CTA's number when position ins.position holds a shared-space operation
    (2 bits, else 0): alu_low adds 128 * it to the byte address, so that the word
    names the flat row GLOBAL_WORDS + cta * SHARED_WORDS + j - GLOBAL_WORDS of CTA cta's
    word j in the shared table and its records (docs/isa.md's flat word space)."""
    shared = [n for n in ADDRESSED_OPS if ".shared" in n and ins.has(n)]
    if not shared:
        return None

    def body(ctx, outs):
        (base,) = outs
        for i in range(len(bk.cur_cta)):
            ctx.step(plus(ctx.v01(bk.cur_cta, i), *(ctx.v01(ins.op(n)) for n in shared)), 2,
                     true_bit(base[i]))

    (base,) = unit(c, f"shared_base.{ins.position}", [ins.ops, bk.cur_cta],
                   [(f"shared_base.{ins.position}", BITS, len(bk.cur_cta))], body)
    return base


def alu_low(c: Circuit, ins: Instruction, lane: int, opnd: Signal,
            cta_base: Signal | None = None) -> tuple[Signal, Signal]:
    """add lo (16) | add carry | sub lo (16) | sub carry | ge_lo | le_lo | eq_lo | c != 0 |
    ready (always +1: reads for the next stage gate on it, so they are placed in the
    layer of this unit's successor instead of long before they are needed); and the
    memory word of a load, store or atomic of either space (spec.ADDRESSED_OPS) as 7
    binary bits, a valid bit (-1 for other operations and addresses past the 128
    words) and the space bit (+1 for a shared-space operation: the memory table's row is
    the flat address, 128 + the word for shared memory; the table decodes it in its
    query projections: ir.BinaryKey): word w <=> the low 16 bits of a + offset
    (+ 128 * cta_base: `shared_base`) lie in [4w, 4w + 4)."""
    a, b, cc = opnd[0:32], opnd[32:64], opnd[64:96]

    def body(ctx, outs):
        o, word = outs[:2]
        if ins.has("add"):
            _adder_low(ctx, a, lambda i: ctx.v01(b, i), 0, o[ADD_LO:ADD_LO + LO],
                       o[ADD_CARRY], ctx.v01(ins.op("add")))
        if ins.has("sub"):
            _adder_low(ctx, a, lambda i: plus(ctx.const(1), scaled(ctx.v01(b, i), -1)), 1,
                       o[SUB_LO:SUB_LO + LO], o[SUB_CARRY], ctx.v01(ins.op("sub")))
        if ins.has(*SET_OPS):
            d = plus(ctx.num(a, 0, LO), scaled(ctx.num(b, 0, LO), -1))
            ctx.step(d, 0, {o[GE_LO]: 2.0}, big=WIDE)
            ctx.step(scaled(d, -1), 0, {o[LE_LO]: 2.0}, big=WIDE)
            ctx.step(d, 0, {o[EQ_LO]: 2.0})
            ctx.step(d, 1, {o[EQ_LO]: -2.0})
        if ins.has("selp"):
            ctx.step(ctx.sum01(cc), 1, {o[C_NONZERO]: 2.0})
        ctx.constant({o[READY]: 2.0})
        if ins.has("clz"):  # clz = the number of n = 1..32 whose top n bits of a are 0
            for n in range(1, 33):  # (0 unless the op is clz, as multiply's sums)
                ctx.step(scaled(ctx.sum01(a, range(32 - n, 32)), -1), 0,
                         {outs[2][0]: CLZ_UNIT}, when=[ctx.v01(ins.op("clz"))], big=64.0)
        memory_ops = [n for n in ADDRESSED_OPS if ins.has(n)]
        if not memory_ops:
            return
        shared_ops = [n for n in memory_ops if ".shared" in n]
        if shared_ops:
            ctx.step(plus(*(ctx.v01(ins.op(n)) for n in shared_ops)), 1, true_bit(word[WORD_SPACE]))
        s = plus(ctx.num(a, 0, LO), ctx.num(ins.offset, 0, LO))
        if cta_base is not None:
            s = plus(s, scaled(ctx.num(cta_base), 4.0 * limits.MODEL_SHARED_WORDS))
        mem = [plus(*(ctx.v01(ins.op(n)) for n in memory_ops))]
        words = limits.MODEL_GLOBAL_WORDS
        for base in (0, 1 << LO):  # S < 2^16, or S wrapped past 2^16 (negative offsets)
            for w in range(words + 1):  # thermometer T_w = [S >= base + 4w]: the word goes
                out = {}                # from w - 1 (none for w = 0) to w (none: w = 128)
                prev = w - 1 if w > 0 else None
                cur = w if w < words else None
                for bit in range(WORD_ADDRESS_BITS):  # none's bits are 0's
                    change = (cur >> bit & 1 if cur is not None else 0) - (
                        prev >> bit & 1 if prev is not None else 0)
                    if change:
                        out[word[bit]] = 2.0 * change
                if (cur is None) != (prev is None):
                    out[word[WORD_ADDRESS_BITS]] = 2.0 if prev is None else -2.0
                ctx.step(s, base + 4 * w, out, when=mem, big=WIDE)

    clz = ([(clz_name(ins, lane), RAW, 1, 32 * CLZ_UNIT)] if ins.has("clz") else [])
    out, word, *_ = unit(c, f"alu_low.{ins.position}.{lane}",
                         [opnd, ins.ops, ins.offset,
                          *([cta_base] if cta_base is not None else [])],
                         [(f"alu_low.{ins.position}.{lane}", BITS, LOW_BITS),
                          (f"word.{ins.position}.{lane}", BITS, WORD_SPACE + 1),
                          *clz], body)
    return out, word


def clz_name(ins: Instruction, lane: int) -> str:
    """alu_low's clz count (a RAW dim: one dim per lane instead of a 32-bit thermometer)."""
    return f"clz.{ins.position}.{lane}"


def _count_bits(ctx, count, r, en) -> None:
    """Bits 0..5 of a count in 0..32 into r (sawtooth: bit k flips at every multiple of
    2^k), gated by en."""
    for k in range(6):
        for m in range(1, 32 // 2 ** k + 1):
            ctx.step(count, m * 2 ** k, {r[k]: 2.0 if m % 2 else -2.0}, when=[en], big=64.0)


SET_OPS = {  # name: (signed, kind)
    "seteq": (False, "eq"), "setne": (False, "ne"),
    "setlt.s": (True, "lt"), "setle.s": (True, "le"), "setgt.s": (True, "gt"),
    "setge.s": (True, "ge"), "setlt.u": (False, "lt"), "setle.u": (False, "le"),
    "setgt.u": (False, "gt"), "setge.u": (False, "ge"),
}


def alu_high(c: Circuit, ins: Instruction, lane: int, opnd: Signal, low: Signal,
             bk: Bookkeeping, loaded: Signal, extensions=()) -> Signal:
    """The 32 result bits of position ins.position for this lane. loaded: the raw read of
    the memory word (0 unless a load); extensions: the other families' parts
    (`machine.families.Extension`), whose bodies add their steps to the same bits."""
    a, b = opnd[0:32], opnd[32:64]

    def body(ctx, outs):
        (r,) = outs

        def en(name):
            return ctx.v01(ins.op(name))

        for i in range(LO):  # add / sub low halves (0 when their op is off)
            parts = [ctx.v01(low, k + i) for k, n in ((ADD_LO, "add"), (SUB_LO, "sub"))
                     if ins.has(n)]
            if parts:
                ctx.linear(plus(*parts), {r[i]: 2.0})
        for name, carry, b_form in (
                ("add", ADD_CARRY, lambda i: ctx.v01(b, i)),
                ("sub", SUB_CARRY, lambda i: plus(ctx.const(1), scaled(ctx.v01(b, i), -1)))):
            if not ins.has(name):
                continue
            for j in range(LO, 32):
                s = plus(*(scaled(plus(ctx.v01(a, i), b_form(i)), 2.0 ** (i - LO))
                           for i in range(LO, j + 1)), ctx.v01(low, carry))
                for k, sign in ((1, 2.0), (2, -2.0), (3, 2.0)):
                    ctx.step(s, k * 2 ** (j - LO), {r[j]: sign}, when=[en(name)], big=WIDE)
        one = ctx.const(1)
        for i in range(32):  # gated units: one SwiGLU unit per case (logic.gated)
            ai, bi = ctx.v01(a, i), ctx.v01(b, i)
            if ins.has("and"):
                gated(ctx, plus(ai, bi, en("and")), 3, one, {r[i]: 2.0})
            if ins.has("or"):  # a + b - ab
                gated(ctx, en("or"), 1, plus(ai, bi), {r[i]: 2.0})
                gated(ctx, plus(ai, bi, en("or")), 3, one, {r[i]: -2.0})
            if ins.has("xor"):  # a + b - 2ab
                gated(ctx, en("xor"), 1, plus(ai, bi), {r[i]: 2.0})
                gated(ctx, plus(ai, bi, en("xor")), 3, one, {r[i]: -4.0})
            if ins.has("mov"):
                gated(ctx, en("mov"), 1, ai, {r[i]: 2.0})
            if ins.has("selp"):  # c != 0 picks a, else b
                gated(ctx, plus(en("selp"), ctx.v01(low, C_NONZERO)), 2, ai, {r[i]: 2.0})
                gated(ctx, plus(en("selp"), one, scaled(ctx.v01(low, C_NONZERO), -1)), 2, bi,
                      {r[i]: 2.0})
        ge_lo, le_lo, eq_lo = ctx.v01(low, GE_LO), ctx.v01(low, LE_LO), ctx.v01(low, EQ_LO)
        for name, (signed, kind) in SET_OPS.items():
            if not ins.has(name):
                continue
            d = plus(ctx.num(a, LO, 32, signed), scaled(ctx.num(b, LO, 32, signed), -1))
            e = plus(d, scaled(ctx.const(1), 2.0 ** 17), scaled(eq_lo, -(2.0 ** 17)))
            conds = {"ge": [(plus(d, ge_lo), 1, 2.0)],
                     "le": [(plus(scaled(d, -1), le_lo), 1, 2.0)],
                     "lt": [(plus(scaled(d, -1), scaled(ge_lo, -1)), 0, 2.0)],
                     "gt": [(plus(d, scaled(le_lo, -1)), 0, 2.0)],
                     "eq": [(e, 0, 2.0), (e, 1, -2.0)],
                     "ne": [(scaled(e, -1), 1, 2.0), (e, 1, 2.0)]}[kind]
            for form, t, sign in conds:
                ctx.step(form, t, {r[0]: sign}, when=[en(name)], big=4 * WIDE)
        lane_ops = [n for n in ("tid", "laneid") if ins.has(n)]
        for i in range(2):  # tid = LANES * (warp in CTA) + lane; laneid = lane
            if lane >> i & 1 and lane_ops:
                ctx.linear(plus(*(en(n) for n in lane_ops)), {r[i]: 2.0})
        for name, value, at in (("ntid", bk.ntid, 0), ("nctaid", bk.nctaid, 0),
                                ("tid", bk.cur_warp_in_cta, 2), ("ctaid", bk.cur_cta, 0),
                                ("warpid", bk.cur_warp_in_cta, 0)):
            if ins.has(name):
                for i in range(len(value)):
                    ctx.step(ctx.v01(value, i), 1, {r[at + i]: 2.0}, when=[en(name)])
        for i in range(32):
            if ins.has("ld.global"):
                ctx.step({ctx.d(loaded)[i]: 1.0 / READ_SCALE}, 1, {r[i]: 2.0},
                         when=[en("ld.global")])
            if ins.has("brev"):
                gated(ctx, en("brev"), 1, ctx.v01(a, 31 - i), {r[i]: 2.0})
        if ins.has("popc"):
            _count_bits(ctx, ctx.sum01(a), r, en("popc"))
        if ins.has("clz"):
            _count_bits(ctx, {ctx.d(clz)[0]: 1.0 / CLZ_UNIT}, r, en("clz"))
        for ext in extensions:
            ext.high(ctx, r)

    clz = c.signals[clz_name(ins, lane)] if ins.has("clz") else None
    inputs = [sig for ext in extensions for sig in ext.inputs] + ([clz] if clz else [])
    (out,) = unit(c, f"alu_high.{ins.position}.{lane}", [opnd, low, ins.ops, bk.ntid, bk.nctaid,
                                                         bk.cur_warp_in_cta, bk.cur_cta,
                                                         loaded, *inputs],
                  [(f"result.{ins.position}.{lane}", BITS, 32)], body)
    return out
