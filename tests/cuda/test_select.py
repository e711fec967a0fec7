"""cuda.select / cuda.narrow: every PTX data form on the interpreter, against Python.

Hand-written PTX covers the forms clang emits rarely (bit fields, funnel shifts, byte
permutes, narrow arithmetic, guarded instructions, combined setp, votes)."""

import pytest

from qgpu.isa import limits

from .helpers import run_ptx

M = 0xFFFFFFFF
# each thread t computes %r10 from x = XS[t] (and y = YS[t]) and stores it at word t
XS = [0x12345678, 0xF00000F1, 7, 0x80000000]
YS = [3, 0xFFFFFFFE, 31, 1]


def run_form(code: str, xs=XS, ys=YS) -> list[int]:
    mem = [0] * limits.MODEL_GLOBAL_WORDS
    mem[16:20] = xs
    mem[20:24] = ys
    body = f"""
    .reg .pred %p<8>;
    .reg .b32 %r<24>;
    .reg .b16 %rs<8>;
    mov.u32 %r1, %tid.x;
    shl.b32 %r2, %r1, 2;
    ld.global.u32 %r3, [%r2+64];
    ld.global.u32 %r4, [%r2+80];
    {code}
    st.global.u32 [%r2], %r10;
    ret;"""
    return run_ptx(body, memory=mem)[:4]


def each(fn, xs=XS, ys=YS):
    return [fn(x, y) & M for x, y in zip(xs, ys, strict=True)]


def s(x):
    return limits.s32(x)


def test_bfe_unsigned_and_signed():
    assert run_form("bfe.u32 %r10, %r3, 4, 8;") == each(lambda x, y: (x >> 4) & 0xFF)
    assert run_form("bfe.s32 %r10, %r3, 28, 4;") == each(lambda x, y: s(x) >> 28)


def test_bfi():
    assert run_form("bfi.b32 %r10, %r4, %r3, 8, 4;") == each(
        lambda x, y: (x & ~0xF00) | ((y << 8) & 0xF00))


def test_funnel_shifts_wrap_and_clamp():
    assert run_form("shf.l.wrap.b32 %r10, %r3, %r4, 8;") == each(
        lambda x, y: ((y << 8) | (x >> 24)))
    assert run_form("shf.r.wrap.b32 %r10, %r3, %r4, %r4;") == each(
        lambda x, y: (((y << 32) | x) >> (y & 31)))
    assert run_form("shf.l.clamp.b32 %r10, %r3, %r4, %r4;") == each(
        lambda x, y: (((y << 32) | x) << min(y, 32)) >> 32)


def test_prmt_byte_permutes():
    assert run_form("prmt.b32 %r10, %r3, 0, 291;") == each(         # 0x0123: byte swap
        lambda x, y: int.from_bytes(x.to_bytes(4, "little"), "big"))
    assert run_form("prmt.b32 %r10, %r3, %r4, 0x5140;") == each(
        lambda x, y: (x & 0xFF) | ((y & 0xFF) << 8) | (((x >> 8) & 0xFF) << 16)
        | (((y >> 8) & 0xFF) << 24))


def test_bfind():
    assert run_form("bfind.u32 %r10, %r3;") == each(lambda x, y: x.bit_length() - 1)
    assert run_form("bfind.s32 %r10, %r3;") == each(
        lambda x, y: (x ^ (M if x >> 31 else 0)).bit_length() - 1)


def test_mad_hi_neg_abs_not_slct():
    assert run_form("mad.hi.u32 %r10, %r3, %r4, 5;") == each(lambda x, y: (x * y >> 32) + 5)
    assert run_form("mad.lo.s32 %r10, %r3, %r4, %r3;") == each(lambda x, y: x * y + x)
    assert run_form("neg.s32 %r10, %r3;") == each(lambda x, y: -x)
    assert run_form("abs.s32 %r10, %r3;") == each(lambda x, y: abs(s(x)))
    assert run_form("not.b32 %r10, %r3;") == each(lambda x, y: ~x)
    assert run_form("slct.u32.s32 %r10, %r3, %r4, %r4;") == each(
        lambda x, y: x if s(y) >= 0 else y)


@pytest.mark.parametrize("cmp,fn", [
    ("lt.s32", lambda x, y: s(x) < s(y)), ("ge.s32", lambda x, y: s(x) >= s(y)),
    ("lo.u32", lambda x, y: x < y), ("hs.u32", lambda x, y: x >= y),
    ("ls.u32", lambda x, y: x <= y), ("hi.u32", lambda x, y: x > y),
    ("eq.b32", lambda x, y: x == y), ("ne.b32", lambda x, y: x != y),
    ("le.u32", lambda x, y: x <= y), ("gt.s32", lambda x, y: s(x) > s(y))])
def test_setp_and_selp(cmp, fn):
    code = f"setp.{cmp} %p1, %r3, %r4;\n selp.b32 %r10, 1, 0, %p1;"
    assert run_form(code) == each(lambda x, y: int(fn(x, y)))


def test_setp_combined_and_two_results():
    code = """setp.ne.s32 %p2, %r4, 31;
    setp.lt.and.u32 %p1|%p3, %r3, %r4, %p2;
    selp.b32 %r11, 2, 0, %p3;
    selp.b32 %r12, 1, 0, %p1;
    or.b32 %r10, %r11, %r12;"""
    assert run_form(code) == each(
        lambda x, y: int(x < y and y != 31) | 2 * int(x >= y and y != 31))


def test_predicate_logic():
    code = """setp.gt.u32 %p1, %r3, 100;
    setp.eq.s32 %p2, %r4, 31;
    xor.pred %p3, %p1, %p2;
    not.pred %p4, %p3;
    or.pred %p5, %p4, %p2;
    selp.b32 %r10, 7, 9, %p5;"""
    assert run_form(code) == each(
        lambda x, y: 7 if (not ((x > 100) ^ (y == 31))) or y == 31 else 9)


def test_guarded_alu_instruction_is_a_select():
    code = """mov.u32 %r10, 5;
    setp.lt.u32 %p1, %r4, 10;
    @%p1 add.s32 %r10, %r3, 1;
    @!%p1 sub.s32 %r10, %r10, 1;"""
    assert run_form(code) == each(lambda x, y: x + 1 if y < 10 else 4)


def test_guarded_store_and_return_become_branches():
    code = """mov.u32 %r10, 1;
    setp.lt.u32 %p1, %r4, 10;
    @%p1 st.global.u32 [%r2+32], %r3;
    @!%p1 ret;"""
    mem_cols = run_form(code)
    assert mem_cols == [1 if y < 10 else 0 for y in YS]


@pytest.mark.parametrize("cvt,fn", [
    ("cvt.s32.s8 %r10, %r3;", lambda x, y: limits.s32((x & 0xFF) << 24) >> 24),
    ("cvt.u32.u8 %r10, %r3;", lambda x, y: x & 0xFF),
    ("cvt.s32.s16 %r10, %r3;", lambda x, y: limits.s32((x & 0xFFFF) << 16) >> 16),
    ("cvt.u32.u16 %r10, %r3;", lambda x, y: x & 0xFFFF),
    ("cvt.u32.u32 %r10, %r3;", lambda x, y: x)])
def test_cvt_extensions(cvt, fn):
    assert run_form(cvt) == each(fn)


def test_sixteen_bit_arithmetic_wraps_at_16_bits():
    code = """cvt.u16.u32 %rs1, %r3;
    cvt.u16.u32 %rs2, %r4;
    add.s16 %rs3, %rs1, %rs2;
    mul.lo.s16 %rs4, %rs3, 3;
    shr.s16 %rs5, %rs4, 1;
    rem.u16 %rs6, %rs1, 7;
    mul.wide.u16 %r11, %rs6, 4;
    cvt.s32.s16 %r12, %rs5;
    add.s32 %r10, %r11, %r12;"""

    def fn(x, y):
        a, b = x & 0xFFFF, y & 0xFFFF
        m = ((a + b) * 3) & 0xFFFF
        sh = (limits.s32(m << 16) >> 16) >> 1
        return (a % 7) * 4 + sh
    assert run_form(code) == each(fn)


def test_votes_and_lane_masks():
    code = """setp.gt.u32 %p1, %r3, 100;
    vote.sync.ballot.b32 %r11, %p1, -1;
    vote.sync.all.pred %p2, %p1, -1;
    vote.sync.any.pred %p3, %p1, -1;
    vote.sync.uni.pred %p4, %p1, -1;
    selp.b32 %r12, 16, 0, %p2;
    selp.b32 %r13, 32, 0, %p3;
    selp.b32 %r14, 64, 0, %p4;
    mov.u32 %r15, %lanemask_lt;
    and.b32 %r16, %r15, %r11;
    popc.b32 %r17, %r16;
    shl.b32 %r17, %r17, 8;
    or.b32 %r18, %r11, %r12;
    or.b32 %r19, %r13, %r14;
    or.b32 %r20, %r18, %r19;
    or.b32 %r10, %r20, %r17;"""
    ballot = sum(1 << t for t, x in enumerate(XS) if x > 100)
    assert ballot == 0b1011
    expect = [ballot | 32 | (bin(ballot & ((1 << t) - 1)).count("1") << 8) for t in range(4)]
    assert run_form(code) == expect


def test_red_and_activemask():
    code = """red.global.add.u32 [64], %r1;
    activemask.b32 %r10;"""
    assert run_form(code) == [0xF] * 4


@pytest.mark.parametrize("load,fn", [
    ("ld.global.u8 %r10, [%r2+65];", lambda x, y: (x >> 8) & 0xFF),
    ("ld.global.s8 %r10, [%r2+67];", lambda x, y: limits.s32(x) >> 24),
    ("ld.global.s16 %r10, [%r2+66];", lambda x, y: limits.s32(x) >> 16),
    ("ld.global.u16 %r10, [%r2+64];", lambda x, y: x & 0xFFFF)])
def test_byte_and_halfword_loads(load, fn):
    assert run_form(load) == each(fn)
