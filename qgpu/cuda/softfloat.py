"""cuda.softfloat: binary32 operations as integer machine code (the model has no float
units; docs/cuda.md, "float32").

Each sequence here computes, from 32-bit patterns and with the ISA's integer operations
only (add sub mul and or xor shl shr min max set* selp clz), exactly what isa.f32 computes:
round to nearest even, subnormals kept, -0 and +0, infinities, and the canonical NaN
0x7fffffff for every NaN result. The sequences are branch-free: special operands select
their result at the end (selp), so a sequence is one basic block.

  fma(a, b, c)   the exact product (48 bits, from 12-bit halves) and c placed in a 64-bit
                 window (the product at bit 14, c at bit 38, both with their leading bit
                 at 60-61), the one with the smaller exponent shifted right with its lost
                 bits jammed into bit 0, added or subtracted as 64-bit integers, made
                 positive, normalised by clz, shifted right again for a subnormal result,
                 rounded once (the jammed bit is far below the rounding position whenever
                 bits were lost, so the rounding is exact) and packed.
  add(a, b)      fma(a, 1.0, b): a * 1 is exact, so the single rounding is the sum's.
  mul(a, b)      fma(a, b, -0.0): adding -0 changes no product, the zero included.
  div(a, b)      26 unrolled restoring division steps on the normalised significands,
                 the remainder as the sticky bit, rounded once (rcp is 1 / a).
  compares, min/max, setnan, cvt between f32 and s32/u32, round-to-integral: short
                 inline sequences.

`emit_float(op, e, srcs)` is the one entry point (cuda.softcall places the sequences in
a kernel); `LOWERED` names the float operations it covers. What it does not cover
(sqrt) stays a native float operation: the interpreter runs it and
the model refuses it, naming the operation and its source line.
"""

from __future__ import annotations

from collections.abc import Callable

from qgpu.cuda.ir import Op, V
from qgpu.isa import OPS, Imm, f32

SIGN, INF, NAN, ABS = f32.SIGN, f32.INF, f32.NAN, 0x7FFFFFFF
ONE = 0x3F800000


class Emitter:
    """Appends integer operations to `ops`, each into a fresh virtual register."""

    def __init__(self, new_vreg: Callable[[], V], origin=None):
        self.new_vreg = new_vreg
        self.origin = origin
        self.ops: list[Op] = []
        self.tag = None           # a routine's sign word (fma), for the return branches

    def __call__(self, op: str, *srcs) -> V | int:
        consts = [s & 0xFFFFFFFF if isinstance(s, int) else s.value if isinstance(s, Imm)
                  else None for s in srcs]
        if None not in consts:                       # constants fold here (add, mul)
            return OPS[op].fn(*consts)
        if len(srcs) == 2 and consts[1] is not None:  # x op constant: the identities
            k = consts[1]
            if k == 0 and op in ("add", "sub", "or", "xor", "shl", "shr.u", "shr.s"):
                return srcs[0]
            if k == 0 and op in ("and", "mul"):
                return 0
            if k == 1 and op == "mul":
                return srcs[0]
        d = self.new_vreg()
        self.ops.append(Op(op, d, tuple(Imm(s & 0xFFFFFFFF) if isinstance(s, int) else s
                                        for s in srcs), 0, self.origin))
        return d


# --- fma, add, mul ----------------------------------------------------------------------

def _sign_word(e: Emitter, a, b, c, rid):
    """The sign word of fma (see fma): the product's sign (bit 31, and a copy in bit 15
    that later steps leave alone), the subtraction flag (bit 0), the return-site id and
    the operand classes a NaN or an infinity needs (bits 11-14: a or b infinite or NaN,
    a or b zero, any NaN, c infinite), each ORed in at once so few values stay alive."""
    t = e("xor", a, b)
    sgn = e("shr.u", e("xor", t, c), 31)
    if rid is not None:
        sgn = e("or", sgn, rid)
    t = e("and", t, SIGN)
    sgn = e("or", e("or", sgn, t), e("shr.u", t, 16))
    abs_a, abs_b = e("and", a, ABS), e("and", b, ABS)
    mx, mn = e("max.u", abs_a, abs_b), e("min.u", abs_a, abs_b)
    sgn = e("or", sgn, e("shl", e("setge.u", mx, INF), 11))
    sgn = e("or", sgn, e("shl", e("seteq", mn, 0), 12))
    abs_c = e("and", c, ABS)
    sgn = e("or", sgn, e("shl", e("seteq", abs_c, INF), 14))
    return e("or", sgn, e("shl", e("setgt.u", e("max.u", mx, abs_c), INF), 13))


def _special_result(e: Emitter, sgn):
    """The result when an operand is a NaN or an infinity (the canonical NaN for NaN
    operands, inf * 0 and inf - inf, else the infinity), 0 when none is (0 is never a
    special result), from the classes in the sign word."""
    fl = e("shr.u", sgn, 11)        # bit 0 a/b inf, 1 a/b zero, 2 NaN, 3 c inf, 4 sign
    sp = e("shl", e("and", fl, 16), 27)
    sc = e("xor", sp, e("shl", sgn, 31))
    v = e("selp", e("or", sc, INF), 0, e("and", fl, 8))
    v = e("selp", e("or", sp, INF), v, e("and", fl, 1))
    invalid = e("and", e("or", e("shr.u", fl, 1), e("and", e("shr.u", fl, 3), sgn)), fl)
    return e("selp", NAN, v, e("and", e("or", invalid, e("shr.u", fl, 2)), 1))


def _unpack_normalised(e: Emitter, x):
    """(m, E): x's significand with its leading bit at bit 31 (subnormals normalised by
    clz; 0 for a zero) and E with |x| = m * 2^(E - 158)."""
    ex = e("shr.u", e("and", x, ABS), 23)
    m = e("or", e("shl", x, 8), e("selp", SIGN, 0, ex))
    ex = e("max.s", ex, 1)
    z = e("clz", m)
    return e("shl", m, z), e("sub", ex, z)


def _shift_right_jam(e: Emitter, hi, lo, s):
    """(hi, lo) >> s (0 <= s <= 64) as a 64-bit value, any bit shifted out ORed into
    bit 0 (the sticky bit). Ordered to keep few values alive."""
    lost = e("shl", hi, e("sub", 64, s))              # hi's bits below s - 32
    lost = e("or", lost, e("shl", lo, e("max.s", e("sub", 32, s), 0)))
    lo = e("or", e("shr.u", lo, s), e("min.u", lost, 1))
    lo = e("or", lo, e("shl", hi, e("sub", 32, s)))
    lo = e("or", lo, e("shr.u", hi, e("sub", s, 32)))
    return e("shr.u", hi, s), lo


def _round_pack(e: Emitter, sign, w, er):
    """The binary32 pattern of sign * w * 2^(er - 158) for a 32-bit w with its leading bit
    at bit 31 (er: the biased exponent of that bit), rounded to nearest even: subnormal
    results shifted right (jammed) first, overflow to infinity."""
    sh = e("min.u", e("max.s", e("sub", 1, er), 0), 32)
    lost = e("shl", w, e("sub", 32, sh))
    w = e("or", e("shr.u", w, sh), e("min.u", lost, 1))
    # the leading bit (2^23) adds one to the exponent field: pack er - 1; a rounding carry
    # into 2^24 moves it on by itself (and to infinity from the largest finite value)
    em = e("shl", e("min.s", e("max.s", e("sub", er, 1), 0), 254), 23)
    q = e("shr.u", w, 8)
    up = e("setgt.u", e("add", e("and", w, 0xFF), e("and", q, 1)), 0x80)
    mag = e("min.u", e("add", em, e("add", q, up)), INF)
    return e("or", mag, sign)


RID_SHIFT = 21      # a routine's return-site id rides in bits 21.. of its sign word


def fma(e: Emitter, a, b, c, rid=None) -> V:
    """a * b + c rounded once (isa.f32.fma, PTX fma.rn.f32). The operations are in an
    order that keeps at most ~8 values alive (cuda.softcall schedules them as written):
    the sign word `sgn` carries, besides the result's sign (bit 31), the subtraction flag
    (bit 0), the exponent of the sum's window (bits 1-10), the operand classes (bits
    11-15, _sign_word) and a routine's return-site id (`rid`, already shifted to
    RID_SHIFT); e.tag is its last value (cuda.softcall branches on it)."""
    sgn = _sign_word(e, a, b, c, rid)
    ma, ea = _unpack_normalised(e, a)
    mb, eb = _unpack_normalised(e, b)
    # a zero product always loses the alignment below (its exponent pushed far down)
    esum = e("selp", -1000, e("add", ea, eb), e("seteq", e("min.u", ma, mb), 0))
    # the exact product P = ma24 * mb24 (< 2^48) as X = P << 14 = (xh, xl), through 12-bit
    # halves (partial products < 2^25): xh = P >> 18, xl = (P << 14) mod 2^32
    ah, al = e("shr.u", ma, 20), e("and", e("shr.u", ma, 8), 0xFFF)
    bh, bl = e("shr.u", mb, 20), e("and", e("shr.u", mb, 8), 0xFFF)
    mid = e("mul", ah, bl)
    hh = e("mul", ah, bh)
    mid = e("add", mid, e("mul", al, bh))
    ll = e("mul", al, bl)
    xl = e("add", e("shl", mid, 26), e("shl", ll, 14))
    mid = e("add", mid, e("shr.u", ll, 12))
    xh = e("add", e("shl", hh, 6), e("shr.u", mid, 6))
    # c: Y = mc << 38 = (yh, 0); |c| = Y * 2^(ec - 188), |a * b| = X * 2^(esum - 314)
    ec = e("shr.u", e("and", c, ABS), 23)
    yh = e("shl", e("or", e("and", c, 0x7FFFFF), e("selp", 0x800000, 0, ec)), 6)
    ec = e("max.s", ec, 1)
    d = e("sub", e("sub", esum, ec), 126)              # X's window above Y's by d bits
    top = e("max.s", e("sub", esum, 124), e("add", ec, 2))   # er + clz64 of the sum
    sgn = e("or", sgn, e("shl", top, 1))               # 3 <= top <= 384
    f = e("setlt.s", d, 0)                             # c's window is the higher one
    sgn = e("xor", sgn, e("shl", e("and", f, sgn), 31))      # bit 31: the larger's sign
    dist = e("min.u", e("max.s", d, e("sub", 0, d)), 64)
    big_h, sm_h = e("selp", yh, xh, f), e("selp", xh, yh, f)
    big_l, sm_l = e("selp", 0, xl, f), e("selp", xl, 0, f)
    sm_h, sm_l = _shift_right_jam(e, sm_h, sm_l, dist)
    # big +/- small: two's complement of small when the signs differ (m = -1)
    m = e("shr.s", e("shl", sgn, 31), 31)
    lo = e("add", big_l, e("xor", sm_l, m))
    hi = e("add", big_h, e("xor", sm_h, m))
    hi = e("add", hi, e("setlt.u", lo, big_l))
    lo2 = e("sub", lo, m)
    hi = e("add", hi, e("setlt.u", lo2, lo))
    # |sum| and its sign (negative only when small's magnitude was the larger)
    neg = e("shr.s", hi, 31)
    lo3 = e("xor", lo2, neg)
    lo = e("sub", lo3, neg)
    hi = e("add", e("xor", hi, neg), e("setlt.u", lo, lo3))
    sgn = e("xor", sgn, e("and", neg, SIGN))
    zero = e("seteq", e("or", hi, lo), 0)
    # normalise: the leading bit to bit 63 (z = clz64), the top word with a sticky bit
    zh = e("clz", hi)
    z = e("add", zh, e("selp", e("clz", lo), 0, e("shr.u", zh, 5)))
    w = e("or", e("shl", hi, z), e("min.u", e("shl", lo, z), 1))
    w = e("or", w, e("shr.u", lo, e("sub", 32, z)))
    w = e("or", w, e("shl", lo, e("sub", z, 32)))
    er = e("sub", e("and", e("shr.u", sgn, 1), 0x3FF), z)
    res = _round_pack(e, e("and", sgn, SIGN), w, er)
    # an exact zero sum: +0, or -0 when both terms are negative zeros (no subtraction)
    zs = e("selp", 0, e("and", sgn, SIGN), e("and", sgn, 1))
    res = e("selp", zs, res, zero)
    special = _special_result(e, sgn)
    e.tag = sgn
    return e("selp", special, res, special)


def add(e: Emitter, a, b, rid=None) -> V:
    return fma(e, a, ONE, b, rid)


def mul(e: Emitter, a, b, rid=None) -> V:
    return fma(e, a, b, SIGN, rid)


def div(e: Emitter, a, b, rid=None) -> V:
    """a / b correctly rounded (isa.f32.div, PTX div.rn.f32): the normalised significands
    (24 bits, a's doubled when it is the smaller) divided by 26 unrolled restoring steps
    (the unsigned minimum of r and r - mb is the restoring subtraction), the remainder the
    sticky bit, then _round_pack. e.tag: a word with the return-site id (see fma)."""
    sign = e("and", e("xor", a, b), SIGN)
    word = sign if rid is None else e("or", sign, rid)
    abs_a, abs_b = e("and", a, ABS), e("and", b, ABS)
    # specials: NaN operands, inf / inf and 0 / 0 give NaN; inf / x and x / 0 infinity;
    # x / inf and 0 / x zero (the sign is the xor of the operands' signs)
    a_inf, b_inf = e("seteq", abs_a, INF), e("seteq", abs_b, INF)
    a_zero, b_zero = e("seteq", abs_a, 0), e("seteq", abs_b, 0)
    nan = e("or", e("setgt.u", e("max.u", abs_a, abs_b), INF),
            e("or", e("and", a_inf, b_inf), e("and", a_zero, b_zero)))
    to_inf = e("or", a_inf, b_zero)
    special = e("selp", NAN, e("selp", e("or", sign, INF), sign, to_inf), nan)
    is_special = e("or", e("or", nan, to_inf), e("or", a_zero, b_inf))
    ma, ea = _unpack_normalised(e, a)
    mb, eb = _unpack_normalised(e, b)
    ma, mb = e("shr.u", ma, 8), e("shr.u", mb, 8)
    small = e("setlt.u", ma, mb)
    r = e("shl", ma, small)                     # r in [mb, 2 mb): the first bit is 1
    er = e("sub", e("add", e("sub", ea, eb), 127), small)
    q = 0
    for _ in range(26):
        c = e("setge.u", r, mb)
        r = e("min.u", r, e("sub", r, mb))
        q = e("or", e("shl", q, 1), c) if not isinstance(q, int) else c
        r = e("shl", r, 1)
    w = e("or", e("shl", q, 6), e("min.u", r, 1))
    res = _round_pack(e, sign, w, er)
    e.tag = word
    return e("selp", special, res, is_special)


# --- compares, min/max ------------------------------------------------------------------

def _ordered(e: Emitter, a, b):
    """(|a|, |b|, 1 if neither is a NaN)."""
    abs_a, abs_b = e("and", a, ABS), e("and", b, ABS)
    return abs_a, abs_b, e("setle.u", e("max.u", abs_a, abs_b), INF)


def _key(e: Emitter, x, abs_x):
    """A signed integer ordered as the float x (NaN aside), -0 and +0 both 0."""
    m = e("shr.s", x, 31)
    return e("sub", e("xor", abs_x, m), m)


def compare(e: Emitter, how: str, a, b) -> V:
    """setp.<how>.f32 (ordered: 0 when a NaN is involved) as 0/1; "nan": either is NaN."""
    abs_a, abs_b, ordered = _ordered(e, a, b)
    if how == "nan":
        return e("xor", ordered, 1)
    ka, kb = _key(e, a, abs_a), _key(e, b, abs_b)
    rel = {"eq": "seteq", "ne": "setne", "lt": "setlt.s", "le": "setle.s",
           "gt": "setgt.s", "ge": "setge.s"}[how]
    return e("and", e(rel, ka, kb), ordered)


def minmax(e: Emitter, want_max: bool, a, b) -> V:
    """PTX min/max.f32: -0 below +0, a NaN operand gives the other, two NaNs the
    canonical NaN."""
    abs_a, abs_b = e("and", a, ABS), e("and", b, ABS)
    # keys that order -0 below +0: flip the magnitude bits of negative patterns
    ka = e("xor", a, e("shr.u", e("shr.s", a, 31), 1))
    kb = e("xor", b, e("shr.u", e("shr.s", b, 31), 1))
    first = e("setge.s" if want_max else "setle.s", ka, kb)
    r = e("selp", a, b, first)
    r = e("selp", b, r, e("setgt.u", abs_a, INF))       # a NaN: b
    r = e("selp", a, r, e("setgt.u", abs_b, INF))       # b NaN: a (both: a NaN)
    return e("selp", NAN, r, e("setgt.u", e("and", r, ABS), INF))


# --- conversions ------------------------------------------------------------------------

def _round_word(e: Emitter, sign, w, mode: int):
    """(w >> 8) rounded in `mode` (0 rn, 1 rz, 2 rm, 3 rp) for the value's sign bit
    (`sign`, 0 or SIGN), the low 8 bits of w being the fraction."""
    q = e("shr.u", w, 8)
    frac = e("and", w, 0xFF)
    if mode == 0:
        up = e("setgt.u", e("add", frac, e("and", q, 1)), 0x80)
    elif mode == 1:
        return q
    else:
        inexact = e("setne", frac, 0)
        pos = e("seteq", sign, 0)
        up = e("and", inexact, e("xor", pos, 1) if mode == 2 else pos)
    return e("add", q, up)


def from_int(e: Emitter, x, signed: bool, mode: int) -> V:
    """cvt.<mode>.f32.{s32,u32}: the integer to binary32, rounded in mode 0..3."""
    if signed:
        neg = e("shr.s", x, 31)
        mag = e("sub", e("xor", x, neg), neg)
        sign = e("and", x, SIGN)
    else:
        mag, sign = x, 0
    z = e("clz", mag)
    w = e("shl", mag, z)                         # leading bit at 31; 0 for 0
    sig = _round_word(e, sign, w, mode)
    # leading bit of w at 2^(31 - z): biased exponent 158 - z; pack exponent - 1 (the
    # 2^23 of sig adds one, a carry into 2^24 another); zero stays zero
    ex = e("shl", e("sub", 157, z), 23)
    mag_f = e("add", ex, sig)
    out = e("selp", e("or", mag_f, sign) if signed else mag_f, 0, mag)
    return out


def to_int(e: Emitter, x, signed: bool, mode: int) -> V:
    """cvt.<mode>i.{s32,u32}.f32: round to an integer in mode 0..3, saturate to the
    type's range, NaN gives 0."""
    abs_x = e("and", x, ABS)
    ex = e("max.s", e("shr.u", abs_x, 23), 1)
    m = e("or", e("shl", x, 8), e("selp", SIGN, 0, e("setge.u", abs_x, 0x800000)))
    # |x| = m * 2^(ex - 158), m's leading bit at 31. ex <= 150: w = |x| * 2^8 (eight
    # fraction bits, the rest jammed) rounds to the integer; ex > 150: |x| >= 2^24 is
    # an integer, m >> (158 - ex) exactly (0 when ex > 158: saturated below)
    sh = e("min.u", e("sub", 150, ex), 32)      # ex > 150 wraps above 32: clamped
    w = e("or", e("shr.u", m, sh), e("min.u", e("shl", m, e("sub", 32, sh)), 1))
    sign = e("and", x, SIGN)
    mag = e("selp", e("shr.u", m, e("sub", 158, ex)), _round_word(e, sign, w, mode),
            e("setgt.s", ex, 150))
    if signed:       # |x| >= 2^31 (infinities too) saturates; -2^31 is its own limit
        val = e("selp", e("sub", 0, mag), mag, sign)
        val = e("selp", e("selp", SIGN, ABS, sign), val, e("setge.s", ex, 158))
    else:            # negative values give 0 (their rounded magnitude or saturation)
        val = e("selp", 0xFFFFFFFF, mag, e("setge.s", ex, 159))
        val = e("selp", 0, val, sign)
    return e("selp", 0, val, e("setgt.u", abs_x, INF))


def round_integral(e: Emitter, x, mode: int) -> V:
    """cvt.<mode>i.f32.f32 (rintf, truncf, floorf, ceilf): x rounded to an integral value
    in mode 0..3; a zero result keeps x's sign, |x| >= 2^23 and infinities are already
    integral, NaN gives the canonical NaN."""
    abs_x = e("and", x, ABS)
    ex = e("max.s", e("shr.u", abs_x, 23), 1)
    m = e("or", e("shl", x, 8), e("selp", SIGN, 0, e("setge.u", abs_x, 0x800000)))
    sh = e("min.u", e("sub", 150, ex), 32)      # ex >= 150: already integral (below)
    w = e("or", e("shr.u", m, sh), e("min.u", e("shl", m, e("sub", 32, sh)), 1))
    sign = e("and", x, SIGN)
    mag = _round_word(e, sign, w, mode)         # <= 2^23: a float exactly
    z = e("clz", mag)
    f = e("add", e("shl", e("sub", 157, z), 23), e("shr.u", e("shl", mag, z), 8))
    r = e("or", e("selp", f, 0, mag), sign)
    r = e("selp", x, r, e("setge.s", ex, 150))
    return e("selp", NAN, r, e("setgt.u", abs_x, INF))


# --- the dispatch -----------------------------------------------------------------------

FMA_FAMILY = ("add.f32", "mul.f32", "fma.f32")   # one fma sequence when mixed
ROUTINES = (*FMA_FAMILY, "div.f32")            # long: shared routines (cuda.softcall)
LOWERED = frozenset({*ROUTINES, "min.f32", "max.f32", "setnan.f32",
                     *(f"set{h}.f32" for h in f32.COMPARES),
                     "cvt.f32.s32", "cvt.f32.u32", "cvt.s32.f32", "cvt.u32.f32",
                     "cvt.f32.f32"})


def emit_float(op: str, e: Emitter, srcs: tuple, rid=None) -> V:
    """The integer sequence for float operation `op` on `srcs` (a cvt's rounding mode is
    its immediate second operand); returns the register holding the result. rid: a
    routine's return-site id register (ROUTINES only; see fma)."""
    if op == "fma.f32":
        return fma(e, *srcs, rid=rid)
    if op == "add.f32":
        return add(e, *srcs, rid=rid)
    if op == "mul.f32":
        return mul(e, *srcs, rid=rid)
    if op == "div.f32":
        return div(e, *srcs, rid=rid)
    if op in ("min.f32", "max.f32"):
        return minmax(e, op == "max.f32", *srcs)
    if op.startswith("set") and op.endswith(".f32"):
        return compare(e, op[3:-4], *srcs)
    if op.startswith("cvt."):
        x, mode = srcs
        mode = mode.value & 3
        if op == "cvt.f32.s32":
            return from_int(e, x, True, mode)
        if op == "cvt.f32.u32":
            return from_int(e, x, False, mode)
        if op in ("cvt.s32.f32", "cvt.u32.f32"):
            return to_int(e, x, op == "cvt.s32.f32", mode)
        if op == "cvt.f32.f32":
            return round_integral(e, x, mode)
    raise KeyError(op)
