"""isa.f32: IEEE 754 binary32 arithmetic on 32-bit patterns, exact to the bit, in integer
arithmetic only (no host float anywhere: a host float could round differently, flush
subnormals or pick another NaN). The interpreter's float operations (isa.ops) are these
functions, so they are the machine's definition of PTX's `.f32` instructions.

Every operation computes the exact result as an integer significand times a power of two
(plus a sticky bit for division and square root, whose exact value is not dyadic) and
rounds it once (`round_pack`): that is IEEE 754's "as if to unbounded precision, then
rounded", so fma rounds once and subnormals are kept (no flush: PTX's default without
`.ftz`). A NaN result is the canonical NaN 0x7fffffff, what NVIDIA GPUs write for every
arithmetic NaN (no payload propagation). Rounding modes: "rn" (nearest, ties to even),
"rz" (toward zero), "rm" (toward -inf), "rp" (toward +inf).

PTX rules kept here: min/max return the other operand when one is NaN (canonical NaN
when both are) and order -0 below +0; ordered comparisons are false on NaN; cvt from
float to integer saturates and gives 0 for NaN.
"""

from __future__ import annotations

from math import isqrt

NAN = 0x7FFFFFFF  # the canonical NaN a GPU writes
SIGN = 0x80000000
INF = 0x7F800000
MAX_FINITE = 0x7F7FFFFF
MODES = ("rn", "rz", "rm", "rp")


def is_nan(a: int) -> bool:
    return (a & 0x7FFFFFFF) > INF


def is_inf(a: int) -> bool:
    return (a & 0x7FFFFFFF) == INF


def is_zero(a: int) -> bool:
    return (a & 0x7FFFFFFF) == 0


def unpack(a: int) -> tuple[int, int, int]:
    """A finite value as (sign, m, e): value = (-1)^sign * m * 2^e exactly."""
    sign, exp, frac = a >> 31, a >> 23 & 0xFF, a & 0x7FFFFF
    if exp == 0:
        return sign, frac, -149
    return sign, frac | 0x800000, exp - 150


def round_pack(sign: int, m: int, e: int, sticky: bool = False, mode: str = "rn") -> int:
    """The binary32 pattern of (-1)^sign * (m + d) * 2^e, 0 <= d < 1 (d > 0 iff sticky),
    rounded once in `mode`; overflow gives infinity or the largest finite value as the
    mode says, and a result below the smallest subnormal rounds to zero or to it."""
    if m == 0 and not sticky:
        return sign << 31
    if m == 0:  # only a sticky part: below any unit of m; scale so that it has bits
        m, e = 1, e - 64  # stands for a positive amount far below the target unit
        sticky = True
    top = m.bit_length() - 1 + e  # exponent of the leading bit
    lsb = max(top - 23, -149)
    shift = lsb - e
    if shift < 2:  # keep a guard bit and one below it, so a sticky part stays below half
        m <<= 2 - shift
        e -= 2 - shift
        shift = 2
    q, r = m >> shift, m & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    inexact = r != 0 or sticky
    if mode == "rn":
        up = r > half or (r == half and (sticky or q & 1))
    elif mode == "rz":
        up = False
    elif mode == "rm":
        up = bool(sign) and inexact
    elif mode == "rp":
        up = not sign and inexact
    else:
        raise ValueError(f"rounding mode {mode!r}")
    q += up
    if q >> 24:  # the carry made 2^24: one more exponent
        q >>= 1
        lsb += 1
    if q < 1 << 23:  # subnormal (or the smallest normal reached by rounding, q = 2^23)
        return sign << 31 | q
    biased = lsb + 150
    if biased >= 255:
        to_inf = mode == "rn" or (mode == "rp" and not sign) or (mode == "rm" and sign)
        return sign << 31 | (INF if to_inf else MAX_FINITE)
    return sign << 31 | biased << 23 | (q - (1 << 23))


def _sum(sa: int, ma: int, ea: int, sb: int, mb: int, eb: int) -> tuple[int, int, int]:
    """The exact sum of two signed dyadic values as (sign, magnitude, exponent); a zero
    sum has sign 0 (the caller applies the zero-sign rule)."""
    e = min(ea, eb)
    va = (ma << (ea - e)) * (-1 if sa else 1)
    vb = (mb << (eb - e)) * (-1 if sb else 1)
    v = va + vb
    return (1 if v < 0 else 0), abs(v), e


def add(a: int, b: int, mode: str = "rn") -> int:
    if is_nan(a) or is_nan(b):
        return NAN
    if is_inf(a) or is_inf(b):
        if is_inf(a) and is_inf(b) and (a ^ b) & SIGN:
            return NAN
        return a if is_inf(a) else b
    sa, ma, ea = unpack(a)
    sb, mb, eb = unpack(b)
    s, m, e = _sum(sa, ma, ea, sb, mb, eb)
    if m == 0:  # exact zero: -0 only for (-0) + (-0), or any exact zero rounded down
        return SIGN if (sa and sb) or (mode == "rm" and not (sa == sb == 0)) else 0
    return round_pack(s, m, e, mode=mode)


def sub(a: int, b: int, mode: str = "rn") -> int:
    return add(a, b ^ SIGN, mode)


def mul(a: int, b: int, mode: str = "rn") -> int:
    if is_nan(a) or is_nan(b):
        return NAN
    sign = (a ^ b) >> 31
    if is_inf(a) or is_inf(b):
        if is_zero(a) or is_zero(b):
            return NAN
        return sign << 31 | INF
    _, ma, ea = unpack(a)
    _, mb, eb = unpack(b)
    return round_pack(sign, ma * mb, ea + eb, mode=mode)


def fma(a: int, b: int, c: int, mode: str = "rn") -> int:
    """a * b + c rounded once (PTX fma.rn.f32; clang's contraction of a * b + c)."""
    if is_nan(a) or is_nan(b) or is_nan(c):
        return NAN
    sp = (a ^ b) >> 31
    if is_inf(a) or is_inf(b):
        if is_zero(a) or is_zero(b):
            return NAN
        if is_inf(c) and (c >> 31) != sp:
            return NAN
        return sp << 31 | INF
    if is_inf(c):
        return c
    _, ma, ea = unpack(a)
    _, mb, eb = unpack(b)
    sc, mc, ec = unpack(c)
    mp, ep = ma * mb, ea + eb
    s, m, e = _sum(sp, mp, ep, sc, mc, ec)
    if m == 0:
        if mp == 0 and mc == 0:  # both zero: the sum of signed zeros
            return SIGN if (sp and sc) or (mode == "rm" and (sp or sc)) else 0
        return SIGN if mode == "rm" else 0
    return round_pack(s, m, e, mode=mode)


def div(a: int, b: int, mode: str = "rn") -> int:
    """a / b correctly rounded (PTX div.rn.f32, CUDA's `/` on floats)."""
    if is_nan(a) or is_nan(b):
        return NAN
    sign = (a ^ b) >> 31
    if is_inf(a):
        return NAN if is_inf(b) else sign << 31 | INF
    if is_inf(b):
        return sign << 31
    if is_zero(b):
        return NAN if is_zero(a) else sign << 31 | INF
    if is_zero(a):
        return sign << 31
    _, ma, ea = unpack(a)
    _, mb, eb = unpack(b)
    k = 64  # quotient bits beyond a's: ample for 24 bits and a guard
    q, r = divmod(ma << k, mb)
    return round_pack(sign, q, ea - eb - k, sticky=r != 0, mode=mode)


def rcp(a: int, mode: str = "rn") -> int:
    return div(0x3F800000, a, mode)


def sqrt(a: int, mode: str = "rn") -> int:
    """The correctly rounded square root (PTX sqrt.rn.f32, CUDA's sqrtf)."""
    if is_nan(a):
        return NAN
    if is_zero(a):
        return a
    if a & SIGN:
        return NAN
    if is_inf(a):
        return a
    _, m, e = unpack(a)
    if e & 1:
        m, e = m << 1, e - 1
    k = 64  # 2k extra bits under the root: 32+ result bits beyond a's
    m <<= 2 * k
    e -= 2 * k
    s = isqrt(m)
    return round_pack(0, s, e // 2, sticky=s * s != m, mode=mode)


def _key(a: int) -> int:
    """An integer that orders non-NaN patterns as their values, -0 just below +0."""
    return -(a & 0x7FFFFFFF) - 1 if a & SIGN else a


def _minmax(a: int, b: int, want_max: bool) -> int:
    if is_nan(a) and is_nan(b):
        return NAN
    if is_nan(a):
        return b
    if is_nan(b):
        return a
    first = _key(a) >= _key(b) if want_max else _key(a) <= _key(b)
    return a if first else b


def fmin(a: int, b: int) -> int:
    return _minmax(a, b, False)


def fmax(a: int, b: int) -> int:
    return _minmax(a, b, True)


def _cmp(a: int, b: int) -> int | None:
    """-1, 0, 1 for a < b, a == b, a > b (-0 == +0); None when unordered (a NaN)."""
    if is_nan(a) or is_nan(b):
        return None
    ka = 0 if is_zero(a) else _key(a)
    kb = 0 if is_zero(b) else _key(b)
    return (ka > kb) - (ka < kb)


COMPARES = {  # ordered: false when either operand is NaN
    "eq": lambda c: c == 0, "ne": lambda c: c is not None and c != 0,
    "lt": lambda c: c is not None and c < 0, "le": lambda c: c is not None and c <= 0,
    "gt": lambda c: c is not None and c > 0, "ge": lambda c: c is not None and c >= 0,
}


def compare(a: int, b: int, how: str) -> int:
    """PTX setp.<how>.f32 as 0/1: the ordered relations of COMPARES, "nan" (either is
    NaN); PTX's unordered forms (equ, ltu, ..., num) are their negations (front end)."""
    if how == "nan":
        return int(is_nan(a) or is_nan(b))
    return int(COMPARES[how](_cmp(a, b)))


def from_int(x: int, signed: bool, mode: str = "rn") -> int:
    """cvt.<mode>.f32.{s32,u32}: a 32-bit integer pattern to float, rounded."""
    x &= 0xFFFFFFFF
    if signed and x & SIGN:
        return round_pack(1, (1 << 32) - x, 0, mode=mode)
    return round_pack(0, x, 0, mode=mode)


def _integral(a: int, mode: str) -> tuple[int, int]:
    """A finite value rounded to an integer in `mode`: (sign, magnitude)."""
    sign, m, e = unpack(a)
    if e >= 0:
        return sign, m << e
    q, r = m >> -e, m & ((1 << -e) - 1)
    half = 1 << (-e - 1)
    if mode == "rn":
        up = r > half or (r == half and q & 1)
    elif mode == "rz":
        up = False
    elif mode == "rm":
        up = bool(sign) and r != 0
    else:
        up = not sign and r != 0
    return sign, q + up


def to_int(a: int, signed: bool, mode: str = "rz") -> int:
    """cvt.<mode>i.{s32,u32}.f32: round to an integer, saturate to the type's range,
    NaN -> 0 (PTX's float-to-integer conversion)."""
    if is_nan(a):
        return 0
    lo, hi = (-(1 << 31), (1 << 31) - 1) if signed else (0, (1 << 32) - 1)
    if is_inf(a):
        v = lo if a & SIGN else hi
    else:
        sign, mag = _integral(a, mode)
        v = max(lo, min(hi, -mag if sign else mag))
    return v & 0xFFFFFFFF


def round_integral(a: int, mode: str) -> int:
    """cvt.<mode>i.f32.f32: rintf (rn), truncf (rz), floorf (rm), ceilf (rp); the sign
    of a zero result is the operand's."""
    if is_nan(a):
        return NAN
    if is_inf(a) or (a >> 23 & 0xFF) >= 150:  # already an integer
        return a
    sign, mag = _integral(a, mode)
    return round_pack(sign, mag, 0)


def flush(a: int) -> int:
    """.ftz: a subnormal becomes the zero of its sign."""
    return a & SIGN if (a & INF) == 0 else a
