"""The float fuzzer (qgpu/fuzz/float_lang.py, float_kernels.py): where the oracle puts
clang's contractions, the oracle's hand-checked IEEE/PTX answers on this CPU, the NaN
comparison rules, a seeded campaign on the interpreter, and (slow) a sample on the model."""

import random
import shutil

import pytest

from qgpu.fuzz.float_host import run_host
from qgpu.fuzz.float_kernels import (
    CaseResult,
    case_setup,
    compare,
    fuzz,
    run_batch,
    run_qgpu,
    summary,
)
from qgpu.fuzz.float_lang import FLOAT_VARS as FV
from qgpu.fuzz.float_lang import INT_VARS as IV
from qgpu.fuzz.float_lang import (
    NOT_ON_MODEL,
    Const,
    Op,
    Program,
    Select,
    bits_of,
    contracted,
    device_expr,
    generate_program,
    host_expr,
    product,
)

A, B, C = FV
needs_clang = pytest.mark.skipif(shutil.which("clang++-19") is None, reason="needs clang++-19")


def f(x: float) -> Const:
    return Const(bits_of(x), "f")


def test_contraction_shapes_follow_clang():
    mul = Op("*", (A, B))
    assert contracted(Op("+", (mul, C))) == (A, B, C, False)
    assert contracted(Op("+", (C, mul))) == (A, B, C, False)
    assert contracted(Op("-", (C, mul))) == (A, B, C, True)             # fma(-a, b, c)
    folded = Op("*", (f(1 / 3), Op("neg", (f(2.5),))))                  # a constant
    assert contracted(Op("+", (folded, C))) is None
    assert contracted(Op("+", (Op("*", (f(2.5), A)), C))) == (f(2.5), A, C, False)
    x, y, z, neg = contracted(Op("-", (mul, C)))                        # fma(a, b, -c)
    assert (x, y, neg) == (A, B, False) and z == Op("neg", (C,))
    assert contracted(Op("+", (Op("neg", (mul,)), C))) == (A, B, C, True)
    # a / 4 is a * 0.25 to LLVM, then fused; a / 3 and a / 2^127 (denormal inverse) are not
    assert contracted(Op("+", (Op("/", (A, f(4.0))), C))) == (A, f(0.25), C, False)
    assert contracted(Op("+", (Op("/", (A, f(3.0))), C))) is None
    assert product(Op("/", (A, f(2.0 ** 127)))) is None
    assert contracted(Op("+", (Op("mul_rn", (A, B)), C))) is None       # __fmul_rn: never
    assert contracted(Op("+", (Op("fma", (A, B, C)), C))) is None
    with pytest.raises(ValueError):
        contracted(Op("+", (mul, Op("*", (C, C)))))


def test_generated_programs_avoid_open_contractions():
    def walk(e):
        if isinstance(e, Select):
            assert product(e.then) is None and product(e.other) is None
            for child in (e.cond, e.then, e.other):
                walk(child)
        elif isinstance(e, Op):
            for child in e.args:
                walk(child)

    for seed in range(200):
        p = generate_program(random.Random(seed))
        assert p.source() == generate_program(random.Random(seed)).source()
        for e in p.float_outputs + p.int_outputs:
            walk(e)
            host_expr(e)              # raises on a sum of two products
        assert "q_fma" not in p.source() and "__builtin_fma" not in p.source()


def test_model_programs_use_only_what_the_model_lowers():
    def ops(e):
        if isinstance(e, Select):
            return ops(e.cond) | ops(e.then) | ops(e.other)
        if isinstance(e, Op):
            return {e.op}.union(*(ops(a) for a in e.args))
        return set()

    seen = set()
    for seed in range(300):
        p = generate_program(random.Random(seed), model=True)
        used = set().union(*(ops(e) for e in p.float_outputs + p.int_outputs))
        assert not used & set(NOT_ON_MODEL), used
        seen |= used
    assert {"+", "*", "fma", "min", "f2i_rz", "as_int", "<"} <= seen


def test_sources_spell_operators_plainly_on_the_device():
    e = Op("+", (Op("*", (A, B)), C))
    assert device_expr(e) == "((((a) * (b))) + (c))"
    assert host_expr(e) == "q_fma(a, b, c)"
    assert device_expr(Op("mul_rn", (A, B))) == "__fmul_rn(a, b)"
    assert device_expr(Op("!<", (A, B))) == "(!((a) < (b)))"
    assert device_expr(Op("!=", (A, B))) == "((a) != (b))"


# (1 + 2^-12)^2 - (1 + 2^-11) is 2^-24 exactly (fused); rounding the product first gives 0
SQ = 0x3F800800
FUSED_PROGRAM = Program(
    [Op("+", (Op("*", (A, B)), C)), Op("add_rn", (Op("mul_rn", (A, B)), C)),
     Op("+", (A, B)), Op("neg", (A,)), Op("min", (Const(0x80000000, "f"), Const(0, "f"))),
     Op("max", (Const(0x80000000, "f"), Const(0, "f"))), Op("u2f", (IV[0],))],
    [Op("f2i_rn", (f(2.5),)), Op("f2i_rd", (f(-0.5),)), Op("f2i_ru", (f(-0.5),)),
     Op("f2i_rz", (f(1e10),)), Op("f2u_rz", (f(-1.0),)), Op("to_int", (f(3e9),)),
     Op("as_int", (Op("+", (A, B)),)), Op("!<", (A, B))])
FUSED_INPUTS = [([SQ, SQ, 0xBF801000], [-1, 0]), ([0x7FC00001, 0x3F800000, 0], [3, 0])]


@needs_clang
def test_host_oracle_knows_ieee_and_ptx_rules():
    (t0, t1), = run_host([(FUSED_PROGRAM, FUSED_INPUTS)])
    floats, ints, nan_bits = t0
    assert floats[0] == 0x33800000 and floats[1] == 0      # fused vs __fmul_rn/__fadd_rn
    assert floats[4:6] == [0x80000000, 0]                   # PTX: -0 below +0
    assert floats[6] == bits_of(4294967295.0)               # (float)(unsigned)-1, rn
    assert ints[:6] == [2, -1, 0, 2**31 - 1, 0, 0] and not nan_bits
    floats, ints, nan_bits = t1
    assert floats[2] == 0x7FFFFFFF and floats[3] == 0xFFC00001   # canonical NaN; neg flips
    assert ints[7] == 1 and nan_bits                        # unordered; NaN bits seen


def test_the_interpreter_matches_the_hand_checked_program():
    got = run_qgpu(FUSED_PROGRAM, FUSED_INPUTS, 1, 2)
    assert got[0][0][:2] == [0x33800000, 0]
    assert got[1][0][2:4] == [0x7FFFFFFF, 0xFFC00001]
    assert got[0][1][:6] == [2, -1, 0, 2**31 - 1, 0, 0]


def test_compare_is_bitwise_except_unknowable_nans():
    def result():
        return CaseResult(1, "ok", inputs=[([0, 0, 0], [0, 0])])

    assert compare(result(), [([1], [5])], [([1], [5], False)]).status == "ok"
    bad = compare(result(), [([0x3F800001], [])], [([0x3F800000], [], False)])
    assert bad.status == "mismatch" and "float output 0" in bad.detail
    assert compare(result(), [([0x80000000], [])], [([0], [], False)]).status == "mismatch"
    nan = compare(result(), [([0x7FC00000], [])], [([0x7FFFFFFF], [], False)])
    assert nan.status == "ok" and nan.both_nan == 1
    skipped = compare(result(), [([], [0x7FC00000])], [([], [0x7FFFFFFF], True)])
    assert skipped.status == "ok" and skipped.nan_bits_skipped == 1
    assert compare(result(), [([], [1])], [([], [2], False)]).status == "mismatch"


@pytest.mark.slow
@needs_clang
@pytest.mark.parametrize("chunk", range(2))
def test_float_fuzz_campaign_on_the_interpreter(chunk):
    results = fuzz(20, seed=2700 + chunk)
    s = summary(results)
    # clear refusals are allowed (the integer lowering of floats keeps more values alive
    # than the 15 registers, whose spills or a division routine beside the fma routine
    # can outgrow the 128-block ROM: 12 of these 40 do), but at least half must run
    assert s["statuses"].get("ok", 0) >= 10, s
    bad = [r for r in results if r.status not in ("ok", "over_limits")]
    assert not bad, "\n".join(f"seed {r.seed}: {r.status}: {r.detail}\n{r.program.source()}"
                              for r in bad[:3])


@pytest.mark.slow
@needs_clang
def test_float_fuzz_sample_on_the_model():
    import qgpu.runtime  # noqa: F401 - registers the model engines

    results = fuzz(2, seed=27, engine="model-check")
    bad = [r for r in results if r.status != "ok"]
    assert not bad, "\n".join(f"seed {r.seed}: {r.status}: {r.detail}" for r in bad)


@needs_clang
def test_barrier_kernels_are_the_same_outputs_in_multi_warp_ctas():
    """--barriers: the kernel with __syncthreads() after each output (not in the host
    oracle), in CTAs of 2-4 warps, on the interpreter equals the oracle; barriers=0 gives
    the cases campaigns always had."""
    for seed in range(30):
        assert case_setup(seed, model=True)[1:] == case_setup(seed, model=True,
                                                              barriers=0.0)[1:]
    results = fuzz(10, seed=36, barriers=1.0)
    assert all(r.program.barriers and r.block >= 8 for r in results)
    assert "__syncthreads();" in results[0].program.source()
    assert "__syncthreads" not in results[0].program.host_function(0)
    bad = [r for r in results if r.status not in ("ok", "over_limits")]
    assert not bad and sum(r.status == "ok" for r in results) >= 5, [r.detail for r in bad]


@pytest.mark.slow
@needs_clang
def test_float_barriers_past_block_64_on_the_model():
    """Two barrier kernels whose last barrier is past block 64 (after the float routine),
    CTAs of 2 warps x 2: on the machine before issue 36's fix the model trapped where the
    interpreter ran the CTA's next warp; now they check token for token."""
    import qgpu.runtime  # noqa: F401 - registers the model engines
    from qgpu.cuda import compile as compile_cuda
    from qgpu.fuzz.float_kernels import launch_arrays
    from qgpu.isa.program import Bar

    seeds = [36 * 1_000_003 + 25, 36 * 1_000_003 + 36]
    for seed in seeds:
        program, grid, block, inputs = case_setup(seed, model=True, barriers=1.0)
        linked = compile_cuda(program.source()).get_function(program.name).link(
            grid, block, launch_arrays(program, inputs))[0]
        assert max(b.terminator.target for b in linked.blocks
                   if isinstance(b.terminator, Bar)) >= 65
    results = run_batch(seeds, "model-forced", barriers=1.0)
    assert [r.status for r in results] == ["ok", "ok"], [r.detail for r in results]


@needs_clang
def test_a_product_of_two_constants_is_folded_not_fused():
    """Seed 36000176 (model programs): `(c < c ? a : 3.0f) + 0x1.555556p-2f * 2.5f`:
    clang folds the constant product, then adds; the oracle fused it (off by one ulp)."""
    result = run_batch([36000176], "model-forced", barriers=0.5,
                       runner=lambda p, inputs, g, b, _e: run_qgpu(p, inputs, g, b))[0]
    assert result.status == "ok" and result.outputs, result.detail
