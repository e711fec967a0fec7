"""isa.f32 against two independent references: numpy's float32 (IEEE arithmetic of this
CPU: add, sub, mul, div, sqrt, conversions) and an exact rational one (fractions: the
exact value rounded by searching the binary32 grid, every rounding mode) for fma, div,
sqrt and the conversions, over random patterns and the edge operands (zeros of both
signs, subnormals, the largest finite values, infinities, NaNs, ties to even)."""

import random
from fractions import Fraction

import numpy as np
import pytest

from qgpu.isa import f32
from qgpu.isa.ops import FLOAT_OPS, OPS

EDGES = [0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x00800001,
         0x807FFFFF, 0x3F800000, 0x3F800001, 0xBF800000, 0x3F7FFFFF, 0x33800000, 0x33800001,
         0x34000000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F000000, 0x7F800000, 0xFF800000, 0x7FC00000,
         0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0x40400000, 0x3DCCCCCD, 0x4B000000, 0x4B000001,
         0x4AFFFFFF, 0xCF000000, 0x4F800000, 0x3F000000, 0xBF000000, 0x3FC00000, 0x40200000]


def operands(n: int, arity: int, seed: int):
    """Edge operands in every combination for the first arity, then random patterns (a
    third of them near 1.0, where additions cancel and tie)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        ops = []
        for _ in range(arity):
            r = rng.random()
            if r < 0.3:
                ops.append(rng.choice(EDGES))
            elif r < 0.5:
                ops.append(rng.randrange(1 << 32) & 0x3FFFFFFF | rng.choice([0x3F800000, 0]))
            elif r < 0.6:
                ops.append(rng.randrange(1 << 24) | rng.choice([0, 0x80000000]))  # subnormal
            else:
                ops.append(rng.randrange(1 << 32))
        out.append(ops)
    return out


def to_np(a: int) -> np.float32:
    return np.array([a], np.uint32).view(np.float32)[0]


def bits(x) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


def exact(a: int):
    """The value of a pattern as a Fraction, or 'nan' / +-inf as strings."""
    if f32.is_nan(a):
        return "nan"
    if f32.is_inf(a):
        return "-inf" if a >> 31 else "inf"
    s, m, e = f32.unpack(a)
    v = Fraction(m) * Fraction(2) ** e
    return -v if s else v


def ref_round(x: Fraction, mode: str = "rn", zero_sign: int = 0) -> int:
    """Round an exact rational to binary32 by locating it on the grid of the binary32
    values (the two neighbours of x, then the mode's choice)."""
    if x == 0:
        return zero_sign << 31
    sign = 1 if x < 0 else 0
    ax = abs(x)
    e = ax.numerator.bit_length() - ax.denominator.bit_length() - 1  # 2^e < ax < 2^(e+2)
    if Fraction(2) ** (e + 1) <= ax:
        e += 1
    e = min(max(e, -126), 127)
    unit = Fraction(2) ** (e - 23)
    k = ax // unit  # lower neighbour k * unit
    rest = ax - k * unit
    if mode == "rn":
        up = rest * 2 > unit or (rest * 2 == unit and k % 2 == 1)
    elif mode == "rz":
        up = False
    elif mode == "rm":
        up = sign == 1 and rest > 0
    else:
        up = sign == 0 and rest > 0
    k += up
    v = k * unit
    if v >= Fraction(2) ** 128:
        big = mode == "rn" or (mode == "rp" and not sign) or (mode == "rm" and sign)
        return sign << 31 | (f32.INF if big else f32.MAX_FINITE)
    if v == 0:
        return sign << 31
    return bits(np.float32(float(-v if sign else v)))


def finite(*xs) -> bool:
    return all(isinstance(x, Fraction) for x in xs)


def check_numpy(fn, npfn, arity, n=6000, seed=0):
    with np.errstate(all="ignore"):
        for ops in operands(n, arity, seed):
            got = fn(*ops)
            want = bits(npfn(*(to_np(a) for a in ops)))
            if f32.is_nan(want):
                assert got == f32.NAN, (ops, hex(got))
            else:
                assert got == want, ([hex(a) for a in ops], hex(got), hex(want))


@pytest.mark.parametrize("name,fn,npfn,arity", [
    ("add", f32.add, np.add, 2), ("sub", f32.sub, np.subtract, 2),
    ("mul", f32.mul, np.multiply, 2), ("div", f32.div, np.divide, 2),
    ("sqrt", f32.sqrt, np.sqrt, 1)])
def test_against_numpy_float32(name, fn, npfn, arity):
    check_numpy(fn, npfn, arity, seed=hash(name) & 0xFFFF)


def test_fma_against_the_exact_value():
    for mode in f32.MODES:
        for a, b, c in operands(3000, 3, seed=1 + f32.MODES.index(mode)):
            got = f32.fma(a, b, c, mode)
            x, y, z = exact(a), exact(b), exact(c)
            if not finite(x, y, z):
                continue  # specials: test_specials
            v = x * y + z
            zs = 0
            if v == 0:
                p0 = x * y == 0
                sp = (a ^ b) >> 31
                zs = (sp & c >> 31) if p0 and z == 0 else 0
                if mode == "rm" and (not (p0 and z == 0) or sp or c >> 31):
                    zs = 1
            assert got == ref_round(v, mode, zs), ([hex(t) for t in (a, b, c)], mode)


def test_fma_rounds_once():
    one_ulp = 0x3F800001  # (1 + 2^-23)^2 - 1 - 2^-22 = 2^-46 exactly; a*b rounds it away
    assert f32.fma(one_ulp, one_ulp, 0xBF800000) == bits(np.float32(2.0**-22 + 2.0**-46))
    assert f32.add(f32.mul(one_ulp, one_ulp), 0xBF800000) == bits(np.float32(2.0**-22))


@pytest.mark.parametrize("mode", f32.MODES)
def test_div_and_sqrt_against_the_exact_value(mode):
    for a, b in operands(3000, 2, seed=11 + f32.MODES.index(mode)):
        x, y = exact(a), exact(b)
        if finite(x, y) and y != 0:
            zs = (a ^ b) >> 31
            assert f32.div(a, b, mode) == ref_round(x / y, mode, zs), (hex(a), hex(b), mode)
        if finite(x) and x > 0:
            got = f32.sqrt(a, mode)
            r = exact(got)
            # the neighbours of the exact root bracket it as the mode says
            below, above = exact(got - 1) if got & 0x7FFFFF or got >> 23 else 0, exact(got + 1)
            if mode == "rn":
                assert (below + r) ** 2 / 4 <= x <= (r + above) ** 2 / 4, hex(a)
                if x in ((below + r) ** 2 / 4, (r + above) ** 2 / 4):
                    assert got & 1 == 0
            elif mode in ("rz", "rm"):
                assert r * r <= x < above * above, hex(a)
            else:
                assert below * below < x <= r * r, hex(a)


def test_specials():
    nan, inf, ninf, z, nz = f32.NAN, f32.INF, 0xFF800000, 0, 0x80000000
    one = 0x3F800000
    assert f32.add(inf, ninf) == nan and f32.add(inf, one) == inf
    assert f32.add(nz, nz) == nz and f32.add(z, nz) == z and f32.add(one, one ^ f32.SIGN) == z
    assert f32.add(one, one ^ f32.SIGN, "rm") == nz
    assert f32.mul(inf, z) == nan and f32.mul(ninf, 0xBF800000) == inf and f32.mul(nz, one) == nz
    assert f32.fma(inf, z, one) == nan and f32.fma(inf, one, ninf) == nan
    assert f32.fma(one, inf, inf) == inf and f32.fma(one, one, ninf) == ninf
    assert f32.fma(nz, one, nz) == nz and f32.fma(nz, one, z) == z
    assert f32.div(z, z) == nan and f32.div(one, z) == inf and f32.div(one, nz) == ninf
    assert f32.div(inf, inf) == nan and f32.div(one, ninf) == nz
    assert f32.sqrt(nz) == nz and f32.sqrt(one ^ f32.SIGN) == nan and f32.sqrt(inf) == inf
    assert f32.rcp(0x40000000) == 0x3F000000 and f32.rcp(z) == inf
    for op in (f32.add, f32.mul, f32.div):
        assert op(0x7F800001, one) == nan and op(one, 0xFFC00000) == nan   # canonical NaN


def test_min_max_nan_rules_and_signed_zeros():
    one, nan = 0x3F800000, 0x7FC00001
    assert f32.fmin(nan, one) == one and f32.fmax(one, nan) == one
    assert f32.fmin(nan, 0xFFC00000) == f32.NAN and f32.fmax(nan, nan) == f32.NAN
    assert f32.fmin(0, 0x80000000) == 0x80000000 and f32.fmax(0x80000000, 0) == 0
    for a, b in operands(4000, 2, seed=3):
        x, y = exact(a), exact(b)
        if finite(x, y) and x != y:
            assert f32.fmin(a, b) == (a if x < y else b) and f32.fmax(a, b) == (a if x > y else b)


def test_compares_ordered_and_unordered():
    with np.errstate(all="ignore"):
        for a, b in operands(4000, 2, seed=4):
            x, y = to_np(a), to_np(b)
            for how, npf in (("eq", np.equal), ("lt", np.less), ("le", np.less_equal),
                             ("gt", np.greater), ("ge", np.greater_equal)):
                assert f32.compare(a, b, how) == int(npf(x, y)), (hex(a), hex(b), how)
            nan = np.isnan(x) or np.isnan(y)
            assert f32.compare(a, b, "ne") == int(not nan and x != y)
            assert f32.compare(a, b, "nan") == int(nan)


@pytest.mark.parametrize("mode", f32.MODES)
def test_conversions(mode):
    rng = random.Random(7 + f32.MODES.index(mode))
    ints = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 0x01000001, 0x01000003, 0xFEFFFFFF,
            16777217, 16777219] + [rng.randrange(1 << 32) for _ in range(3000)]
    for x in ints:
        sx = x - (1 << 32) if x >> 31 else x
        assert f32.from_int(x, True, mode) == ref_round(Fraction(sx), mode), (x, mode)
        assert f32.from_int(x, False, mode) == ref_round(Fraction(x), mode), (x, mode)
    rnd = {"rn": np.rint, "rz": np.trunc, "rm": np.floor, "rp": np.ceil}[mode]
    for (a,) in operands(4000, 1, seed=9):
        v = to_np(a)
        if np.isnan(v):
            assert f32.to_int(a, True, mode) == 0 and f32.round_integral(a, mode) == f32.NAN
            continue
        r = float(rnd(np.float64(v)))
        assert f32.to_int(a, True, mode) == int(min(max(r, -2**31), 2**31 - 1)) & 0xFFFFFFFF
        assert f32.to_int(a, False, mode) == int(min(max(r, 0), 2**32 - 1))
        assert f32.round_integral(a, mode) == bits(rnd(v)), (hex(a), mode)


def test_flush():
    assert f32.flush(0x00000001) == 0 and f32.flush(0x807FFFFF) == 0x80000000
    assert f32.flush(0x00800000) == 0x00800000 and f32.flush(f32.NAN) == f32.NAN


def test_the_isa_float_ops_are_these_functions():
    ops = {name: spec.fn for name, spec in OPS.items() if name in FLOAT_OPS}
    a, b, c = 0x3F800001, 0xC0490FDB, 0x00000003
    assert ops["fma.f32"](a, b, c) == f32.fma(a, b, c) and ops["div.f32"](a, b) == f32.div(a, b)
    assert ops["setlt.f32"](b, a) == 1 and ops["setnan.f32"](a, f32.NAN) == 1
    for k, mode in enumerate(f32.MODES):
        assert ops["cvt.s32.f32"](b, k) == f32.to_int(b, True, mode)
        assert ops["cvt.f32.u32"](0xFFFFFFFF, k) == f32.from_int(0xFFFFFFFF, False, mode)
