"""mul.hi / mad.hi are not native: cuda.select expands them (16-bit halves, four low
products). The expansion against the 64-bit product, through CUDA source (__mulhi,
__umulhi, division by constants) and hand-written PTX, on the interpreter."""

import random

import numpy as np
import pytest

from qgpu import suite
from qgpu.cuda.driver import compile_to_ptx
from qgpu.errors import AssemblyError
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.isa.ops import OPS

from .helpers import i32, launch, u32
from .test_select import each, run_form

EDGE = [0, 1, 2, 3, 0xFFFFFFFF, 0xFFFFFFFE, 0x80000000, 0x80000001, 0x7FFFFFFF, 0xFFFF,
        0x10000, 0xFFFF0000, 0x8000, 0x7FFF8000, 0x12345678, 0xDEADBEEF]
_rng = random.Random(11)
PAIRS = [(a, b) for a in EDGE for b in EDGE] + [
    (_rng.getrandbits(32), _rng.getrandbits(32)) for _ in range(64)]
N = limits.LANES * limits.MODEL_MAX_WARPS      # threads per launch (the machine's most)


def hi_u(a, b):
    return (a * b) >> 32


def hi_s(a, b):
    return limits.u32((limits.s32(a) * limits.s32(b)) >> 32)


MULHI_SRC = """
__global__ void hi(const unsigned *a, const unsigned *b, int *s, unsigned *u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[i] = __mulhi((int)a[i], (int)b[i]);
  u[i] = __umulhi(a[i], b[i]);
}
"""


@pytest.mark.parametrize("chunk", range(0, len(PAIRS), N))
def test_mulhi_and_umulhi_equal_the_64_bit_product(chunk):
    pairs = PAIRS[chunk:chunk + N]
    assert len(pairs) == N
    a, b = u32([p[0] for p in pairs]), u32([p[1] for p in pairs])
    s, u = np.zeros(N, np.int32), np.zeros(N, np.uint32)
    launch(MULHI_SRC, "hi", 1, N, a, b, s, u)
    assert [limits.u32(int(x)) for x in s] == [hi_s(x, y) for x, y in pairs]
    assert [int(x) for x in u] == [hi_u(x, y) for x, y in pairs]


DIV_SRC = """
__global__ void divc(const int *a, int *s, unsigned *u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i];
  unsigned ux = (unsigned)x;
  s[2 * i] = x / (SDIV);
  s[2 * i + 1] = x % (SDIV);
  u[2 * i] = ux / UDIVu;
  u[2 * i + 1] = ux % UDIVu;
}
"""
XS_DIV = EDGE + [_rng.getrandbits(32) for _ in range(8)]     # two launches of 12 threads


@pytest.mark.parametrize("d,ud", [(3, 3), (7, 7), (-5, 10), (641, 641),
                                  (1000000007, 1000000007), (-2147483647, 0x10001),
                                  (0x7FFFFFFF, 0x7FFFFFFF), (-65537, 12345)])
def test_division_by_constants_follows_c(d, ud):
    src = DIV_SRC.replace("UDIV", str(ud)).replace("SDIV", str(d))
    ptx = compile_to_ptx(src)
    assert "mul.hi.s32" in ptx and "mul.hi.u32" in ptx
    for xs in (XS_DIV[:12], XS_DIV[12:]):
        n = len(xs)
        s, u = np.zeros(2 * n, np.int32), np.zeros(2 * n, np.uint32)
        launch(src, "divc", 1, n, i32(xs), s, u)
        want_s, want_u = [], []
        for x in xs:
            want_s += [suite.c_div(limits.s32(x), d), suite.c_rem(limits.s32(x), d)]
            want_u += [x // ud, x % ud]
        assert [int(v) for v in s] == want_s
        assert [int(v) for v in u] == want_u


XS = [0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0xDEADBEEF]
YS = [0x80000000, 0xFFFFFFFF, 0x7FFFFFFF, 1]


def test_mul_hi_and_mad_hi_forms_in_ptx():
    assert run_form("mul.hi.u32 %r10, %r3, %r4;", XS, YS) == each(hi_u, XS, YS)
    assert run_form("mul.hi.s32 %r10, %r3, %r4;", XS, YS) == each(hi_s, XS, YS)
    assert run_form("mul.hi.s32 %r10, %r3, -7;", XS, YS) == each(
        lambda x, y: hi_s(x, 0xFFFFFFF9), XS, YS)
    assert run_form("mul.hi.u32 %r10, 0xffffffff, %r4;", XS, YS) == each(
        lambda x, y: hi_u(0xFFFFFFFF, y), XS, YS)
    # the destination is a source: the halves are read before it is written
    assert run_form("mov.u32 %r10, %r3;\n mul.hi.s32 %r10, %r10, %r4;", XS, YS) == each(
        hi_s, XS, YS)
    assert run_form("mad.hi.s32 %r10, %r3, %r4, %r3;", XS, YS) == each(
        lambda x, y: hi_s(x, y) + x, XS, YS)
    assert run_form("mov.u32 %r10, %r4;\n mad.hi.u32 %r10, %r3, %r10, %r10;", XS, YS) == each(
        lambda x, y: hi_u(x, y) + y, XS, YS)
    guarded = "setp.lt.u32 %p1, %r3, %r4;\n mov.u32 %r10, 5;\n @%p1 mul.hi.s32 %r10, %r3, %r4;"
    assert run_form(guarded, XS, YS) == each(lambda x, y: hi_s(x, y) if x < y else 5, XS, YS)


@pytest.mark.parametrize("name", ["div_by_constants", "int_intrinsics", "compact_ballot"])
def test_suite_programs_with_mul_hi_use_only_native_ops(name):
    spec = next(s for s in suite.load_suite() if s.name == name)
    assert "mul.hi" in compile_to_ptx(spec.source)
    program = suite.compiled_module(spec.source).get_function(spec.kernel).program
    ops = {ins.op for blk in program.blocks for stage in blk.stages for ins in stage}
    assert ops <= set(OPS) and not any(op.startswith("mulhi") for op in ops)
    assert "mul" in ops and "shr.u" in ops


def test_mulhi_is_not_a_native_operation():
    assert "mulhi.s" not in OPS and "mulhi.u" not in OPS
    with pytest.raises(AssemblyError):
        assemble(".kernel k\nblock 0:\n  mulhi.u r1, r2, r3\n  exit\n")
