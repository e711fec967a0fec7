"""The fuzzer's language: hand-checked C semantics of the evaluator, the UB guards in the
emitted source, and (slow) the evaluator against clang-19's native build of the same
programs with the undefined-behaviour sanitizer trapping."""

import random
import shutil

import pytest

from qgpu.fuzz.cuda_lang import (
    INT_MIN,
    Binary,
    Const,
    Program,
    Ternary,
    Unary,
    Var,
    c_expr,
    evaluate,
    generate_program,
    host_check,
    run_program_python,
)

A, C = Var("a", "i"), Var("c", "u")


def ev(e, a=0, c=0):
    return evaluate(e, {"a": a, "c": c})


def test_mixed_comparisons_convert_to_unsigned():
    assert ev(Binary("<", A, C), a=-1, c=1) == 0          # -1 < 1u is false in C
    assert ev(Binary("<", A, Const(1, "i")), a=-1) == 1


def test_division_truncates_and_is_guarded():
    assert ev(Binary("/", A, Const(2, "i")), a=-7) == -3
    assert ev(Binary("%", A, Const(2, "i")), a=-7) == -1
    assert ev(Binary("/", A, Const(-1, "i")), a=INT_MIN) == INT_MIN   # guarded: a
    assert ev(Binary("%", A, Const(0, "i")), a=5) == 5                 # guarded: a
    assert ev(Binary("/", C, Const(-1, "i")), c=7) == 0                # 7u / 0xffffffffu
    assert "q_sdiv" in c_expr(Binary("/", A, Const(3, "i")))


def test_shifts_mask_the_amount_and_keep_the_left_type():
    assert ev(Binary(">>", A, Const(33, "i")), a=-8) == -4             # amount 33 & 31 = 1
    assert ev(Binary(">>", C, Const(1, "i")), c=0x80000000) == 0x40000000
    assert ev(Binary("<<", A, Const(31, "i")), a=3) == INT_MIN
    assert "& 31" in c_expr(Binary("<<", A, Const(40, "i")))


def test_signed_wraparound_goes_through_unsigned_in_the_source():
    e = Binary("+", A, Const(1, "i"))
    assert ev(e, a=2**31 - 1) == INT_MIN
    assert "(unsigned)" in c_expr(e)
    assert ev(Unary("-", A), a=INT_MIN) == INT_MIN
    assert ev(Unary("abs", A), a=INT_MIN) == 0


def test_unary_intrinsics_and_ternary_types():
    assert ev(Unary("clz", Const(0, "i"))) == 32
    assert ev(Unary("popc", A), a=-1) == 32
    assert ev(Unary("brev", Const(1, "u"))) == 0x80000000
    t = Ternary(A, Const(-1, "i"), Const(0, "u"))
    assert t.typ == "u" and ev(t, a=1) == 0xFFFFFFFF


def test_program_statements_run_like_c():
    body = ("assign", Var("x", "i"), Binary("+", Var("x", "i"), Var("k", "i")))
    loop = ("for", Const(7, "i"), body)                          # 7 & 3 = 3 iterations
    branch = ("if", Binary(">", A, Const(0, "i")), ("assign", Var("y", "u"), Const(9, "u")),
              ("assign", Var("y", "u"), Const(4, "u")))
    program = Program([loop, branch], [Var("x", "i"), Var("y", "u")])
    assert run_program_python(program, [10, 0, 0, 0], 0) == [(10 ^ 5) + 0 + 1 + 2, 9]
    assert run_program_python(program, [-3, 0, 0, 0], 0)[1] == 4
    assert "for (int k = 0;" in program.source()


def test_loop_bound_is_evaluated_before_every_iteration():
    # for (k = 0; k < (d & 3); ++k) d = d - 2: d = 7 -> bound 3, k=0 runs, d = 5 -> bound
    # 1, k=1 stops. (Evaluating the bound once would run 3 times.) Found by the fuzzer.
    d = Var("d", "u")
    loop = ("for", d, ("assign", d, Binary("-", d, Const(2, "u"))))
    assert run_program_python(Program([loop], [d]), [0, 0, 0, 7], 0) == [5]


def test_generation_is_deterministic_and_bounds_divisions():
    for seed in range(50):
        one = generate_program(random.Random(seed)).source()
        assert one == generate_program(random.Random(seed)).source()
        assert one.count("q_sdiv(") + one.count("q_srem(") + one.count("q_udiv(") \
            + one.count("q_urem(") <= 4 + 1       # 4 helper definitions + at most 1 use


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("clang++-19") is None, reason="needs clang++-19")
def test_evaluator_agrees_with_native_clang():
    rng = random.Random(2024)
    for _ in range(12):
        program = generate_program(rng)
        inputs = [[rng.randint(-2**31, 2**31 - 1) for _ in range(4)] for _ in range(3)]
        inputs.append([INT_MIN, -1, 0xFFFFFFFF, 0])
        assert host_check(program, inputs) is None, program.source()


def test_minimise_shrinks_a_failure_to_its_cause():
    from qgpu.errors import CompileError
    from qgpu.fuzz.cuda_kernels import check_program, minimise

    def runner(program, inputs, grid, block):       # "fails" on any use of division
        if any("div(" in c_expr(e) for e in program.outputs):
            raise CompileError("division")
        return [run_program_python(program, row, t) for t, row in enumerate(inputs)]

    big = Binary("+", Binary("*", A, Const(3, "i")), Binary("/", A, Binary("^", A, C)))
    program = Program([("assign", Var("x", "i"), Unary("~", A))], [big, A])
    failing = check_program(1, program, 1, 2, [[5, 0, 1, 0], [7, 0, 2, 0]], runner)
    assert failing.status == "compile_error"
    small = minimise(failing, 1, 2, runner)
    assert small.status == "compile_error"
    assert small.program.statements == [] and len(small.program.outputs) == 1
    out = small.program.outputs[0]
    assert isinstance(out, Binary) and out.op == "/"
    assert all(isinstance(e, Var | Const) for e in (out.left, out.right))


def test_fuzz_reference_feeds_the_gpu_harness():
    from qgpu.fuzz.cuda_kernels import fuzz_reference
    from qgpu.validate.reference import decode_outputs
    from qgpu.validate.run import validate

    def python_runner(program, inputs, grid, block):
        return [run_program_python(program, row, t) for t, row in enumerate(inputs)]

    document = fuzz_reference(4, seed=9, runner=python_runner)
    assert len(document["cases"]) == 4 and len(document["kernels"]) == 4

    class EvaluatorAsGpu:
        def device_info(self):
            return {"gpu": "evaluator"}

        def run(self, kernel, params, case, args):
            assert [p.name for p in params] == ["in", "out"]
            assert kernel["source"].startswith("#define INT_MIN_")
            return decode_outputs(case["oracle"])

    report = validate(document, EvaluatorAsGpu())
    assert report["cases_matched"] == report["cases_run"] == 4
