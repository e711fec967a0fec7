"""cuda.softfloat / cuda.softcall: every integer sequence equals isa.f32 (the native float
operations, the reference) over edge operands and seeded random bit patterns, evaluated
with the ISA's own integer operations; kernels through the whole front end keep no
lowered float operation, share one routine per kind, and return each lane to its own
call site on the real interpreter."""

import random

import numpy as np
import pytest

import qgpu
from qgpu.cuda import softfloat as sf
from qgpu.cuda.ir import V
from qgpu.isa import f32
from qgpu.isa.ops import FLOAT_OPS, OPS

EDGES = [0, 0x80000000, 1, 0x80000001, 0x7FFFFF, 0x807FFFFF, 0x800000, 0x800001,
         0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF,
         0x3F800000, 0xBF800000, 0x3F800001, 0x40000000, 0x4B000000, 0x4B000001, 0x3EFFFFFF,
         0x3F000000, 0x3FC00000, 0x33800000, 0x34000000, 0x4F000000, 0xCF000000,
         0x4F800000, 0x00400000, 0x40200000, 0xC0200000]


def sequence(emit, n):
    """The ops of emit(e, *n operand registers), and a function evaluating them."""
    count = [0]

    def new():
        count[0] += 1
        return V(count[0])

    e = sf.Emitter(new)
    ins = [new() for _ in range(n)]
    out = emit(e, *ins)

    def run(*vals):
        env = dict(zip(ins, vals, strict=True))
        for op in e.ops:
            env[op.dst] = OPS[op.op].fn(*(env[s] if isinstance(s, V) else s.value
                                          for s in op.srcs))
        return env[out] if isinstance(out, V) else out
    return e.ops, run


def operand(r: random.Random) -> int:
    k = r.random()
    if k < 0.3:
        return r.getrandbits(32)
    if k < 0.45:
        return r.choice(EDGES)
    if k < 0.8:                           # nearby exponents: cancellation and ties
        return r.getrandbits(1) << 31 | r.randint(100, 150) << 23 | r.getrandbits(23)
    return r.getrandbits(1) << 31 | r.randint(0, 3) << 23 | r.getrandbits(23)  # subnormal


def check(run, ref, cases):
    bad = [(c, run(*c), ref(*c)) for c in cases if run(*c) != ref(*c)]
    assert not bad, [tuple(hex(x) for x in (*c, g, w)) for c, g, w in bad[:5]]


def test_fma_random_edges_and_cancellation():
    ops, run = sequence(sf.fma, 3)
    assert all(op.op in OPS and op.op not in FLOAT_OPS for op in ops)
    r = random.Random(2701)
    cases = [(r.choice(EDGES), r.choice(EDGES), r.choice(EDGES)) for _ in range(600)]
    for _ in range(2500):
        a, b, c = operand(r), operand(r), operand(r)
        if r.random() < 0.4:              # c close to -(a * b): massive cancellation
            c = f32.mul(a, b) ^ f32.SIGN ^ r.choice([0, 1, 2, 0x10, 0x800000])
        cases.append((a, b, c))
    check(run, f32.fma, cases)


@pytest.mark.parametrize("name", ["add", "mul"])
def test_add_and_mul_are_fma_with_a_constant(name):
    _, run = sequence(getattr(sf, name), 2)
    r = random.Random(2702)
    cases = [(a, b) for a in EDGES for b in EDGES]
    cases += [(operand(r), operand(r)) for _ in range(1500)]
    cases += [(a, a ^ f32.SIGN ^ r.choice([0, 1])) for a in (operand(r) for _ in range(200))]
    check(run, getattr(f32, name), cases)


@pytest.mark.parametrize("how", [*f32.COMPARES, "nan"])
def test_compares(how):
    _, run = sequence(lambda e, a, b: sf.compare(e, how, a, b), 2)
    r = random.Random(2703)
    cases = [(a, b) for a in EDGES for b in EDGES]
    cases += [(a, a ^ r.choice([0, f32.SIGN, 1])) for a in (operand(r) for _ in range(300))]
    cases += [(operand(r), operand(r)) for _ in range(300)]
    check(run, lambda a, b: f32.compare(a, b, how), cases)


@pytest.mark.parametrize("want_max", [False, True])
def test_min_max_nan_rules_and_signed_zeros(want_max):
    _, run = sequence(lambda e, a, b: sf.minmax(e, want_max, a, b), 2)
    r = random.Random(2704)
    cases = [(a, b) for a in EDGES for b in EDGES]
    cases += [(operand(r), operand(r)) for _ in range(500)]
    check(run, f32.fmax if want_max else f32.fmin, cases)


INT_EDGES = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x1000000, 0x1000001, 0x1000003,
             0xFFFFFF, 0x80000001, 0x7FFFFFC0, 0x7FFFFFBF, 0xFFFFFF80, 0xFFFFFF7F]
TO_INT_EDGES = [0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001, 0x4F7FFFFF, 0x4F800000,
                0x3F000000, 0x3FC00000, 0x40200000, 0xBF000000, 0xBFC00000, 0x3E800000,
                0xBE800000, 0x4B7FFFFF, 0x4B800001, 0xCB000001, *EDGES]


@pytest.mark.parametrize("mode", range(4))
@pytest.mark.parametrize("signed", [True, False])
def test_conversions_in_every_mode(mode, signed):
    r = random.Random(2705 + mode)
    _, run = sequence(lambda e, x: sf.from_int(e, x, signed, mode), 1)
    ints = INT_EDGES + [r.getrandbits(r.randint(1, 32)) for _ in range(400)]
    check(run, lambda x: f32.from_int(x, signed, f32.MODES[mode]), [(x,) for x in ints])
    _, run = sequence(lambda e, x: sf.to_int(e, x, signed, mode), 1)
    floats = TO_INT_EDGES + [r.getrandbits(1) << 31 | r.randint(110, 160) << 23
                             | r.getrandbits(23) for _ in range(400)]
    check(run, lambda x: f32.to_int(x, signed, f32.MODES[mode]), [(x,) for x in floats])


def test_division():
    _, run = sequence(sf.div, 2)
    r = random.Random(2707)
    cases = [(a, b) for a in EDGES for b in EDGES]
    cases += [(operand(r), operand(r)) for _ in range(1200)]
    check(run, f32.div, cases)


@pytest.mark.parametrize("mode", range(4))
def test_round_to_integral(mode):
    _, run = sequence(lambda e, x: sf.round_integral(e, x, mode), 1)
    r = random.Random(2708 + mode)
    floats = TO_INT_EDGES + [r.getrandbits(1) << 31 | r.randint(100, 155) << 23
                             | r.getrandbits(23) for _ in range(600)]
    check(run, lambda x: f32.round_integral(x, f32.MODES[mode]), [(x,) for x in floats])


def test_the_fma_routine_fits_beside_a_kernel():
    """The routine's sequence keeps few values alive when run in the written order
    (what cuda.softcall asks the scheduler for): at most 9 with its return-site id."""
    ops, _ = sequence(lambda e, a, b, c, rid: sf.fma(e, a, b, c, rid), 4)
    last = {}
    for i, op in enumerate(ops):
        for u in op.uses():
            last[u] = i
    live, peak = {V(1), V(2), V(3), V(4)}, 0
    for i, op in enumerate(ops):
        live = {v for v in live if last.get(v, -1) > i} | {op.dst}
        peak = max(peak, len(live))
    assert peak <= 9 and len(ops) < 200


DIVERGENT = """
__global__ void k(float *o, const float *x, const float *y) {
  int i = threadIdx.x;
  float a = x[i], b = y[i];
  if (i & 1) o[i] = a + b;            // sites on divergent paths: lanes reach the shared
  else o[i] = (a + 1.5f) * b;         // routine from different sites
  o[8 + i] = a * b + o[i];            // add, mul and fma: one fma routine
}
"""


def _two_inputs_run(kernel, seed: int, inf_in: int):
    """k(o, x, y) on one warp of 8 lanes with random x, y holding a denormal, a -0 and an
    inf (in x, or in y when inf_in); the bits of o, x and y."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(8) * 50).astype(np.float32)
    y = (rng.standard_normal(8) * 50).astype(np.float32)
    x[0], y[1] = np.float32(1e-40), -0.0
    (y if inf_in else x)[2] = np.inf
    o = np.zeros(16, np.float32)
    kernel(1, 8, (o, x, y))
    return [a.view(np.uint32).tolist() for a in (o, x, y)]


def test_kernels_share_one_routine_and_lanes_return_to_their_sites():
    kernel = qgpu.compile(DIVERGENT, engine="interp").get_function("k")
    program = kernel.program
    ops = {ins.op for blk in program.blocks for st in blk.stages for ins in st}
    assert not ops & {"add.f32", "mul.f32", "fma.f32"}      # integer code only
    assert kernel.template.stats["float_calls"] == {"fma.f32": 4}   # add, mul: fma too
    u, xb, yb = _two_inputs_run(kernel, 2706, 0)
    for i in range(8):
        first = f32.add(xb[i], yb[i]) if i & 1 else f32.mul(f32.add(xb[i], 0x3FC00000), yb[i])
        assert u[i] == first
        assert u[8 + i] == f32.fma(xb[i], yb[i], first)


TWO_ROUTINES = """
__global__ void k(float *o, const float *x, const float *y) {
  int i = threadIdx.x;
  float a = x[i], b = y[i];
  float s = a + b, d = a - b;         // fma-family sites before and after two divisions
  o[i] = s / b;                       // in one block: the fma routine's pass splits the
  o[8 + i] = d / s * a;               // blocks that the division routine's pass made
}
"""


def test_two_routines_split_one_block_into_distinct_blocks():
    """Regression (float fuzz seeds 2700008111, 2701008106): the second routine's pass named
    its continuation blocks as the first's had (`entry.ret0`), so one overwrote the other:
    an assertion, or a return to the wrong site and a kernel that never ended."""
    kernel = qgpu.compile(TWO_ROUTINES, engine="interp").get_function("k")
    assert kernel.template.stats["float_calls"] == {"div.f32": 2, "fma.f32": 3}
    u, xb, yb = _two_inputs_run(kernel, 27, 1)
    for i in range(8):
        a, b = xb[i], yb[i]
        s, d = f32.add(a, b), f32.sub(a, b)
        assert u[i] == f32.div(s, b)
        assert u[8 + i] == f32.mul(f32.div(d, s), a)
