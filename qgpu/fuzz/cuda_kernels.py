"""fuzz.cuda_kernels: differential fuzzing of the CUDA front end and the reference interpreter.

Generates random integer CUDA kernels -- expression trees over int and unsigned with
+ - * / % & | ^ << >> ~ ! && ||, comparisons, ?:, min, max, abs, casts, __popc, __clz,
__brev, a few statements with optional if/else and loops -- compiles each with
qgpu.cuda.compile, runs it on the interpreter for several threads with edge-case inputs, and
compares every output with a Python evaluation of the same program under C semantics
(32-bit wrap-around, truncating division, arithmetic right shift of int).

The source never has undefined behaviour: signed + - * and negation go through unsigned,
division and remainder go through helpers that avoid b == 0 and INT_MIN / -1, shift amounts
are masked to 0..31, abs never sees INT_MIN. So any disagreement is a qgpu bug (or a bug of
this evaluator: `--host-check` runs the same programs compiled natively by clang-19 for the
host, which checks the evaluator without qgpu).

  python -m qgpu.fuzz.cuda_kernels --cases 2000 --seed 1        # prints cases, failures, rate
  python -m qgpu.fuzz.cuda_kernels --cases 200 --host-check     # the evaluator vs native C
  python -m qgpu.fuzz.cuda_kernels --cases 200 --reference f.json  # for qgpu validate-gpu
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from qgpu.cuda import compile as compile_cuda
from qgpu.errors import QgpuError
from qgpu.fuzz.cuda_lang import (
    Binary,
    Const,
    Program,
    Ternary,
    Unary,
    generate_program,
    host_check,
    run_program_python,
)
from qgpu.progress import progress as progress_bar
from qgpu.validate.reference import (
    encode_array,
    program_case,
    reference_document,
    save_reference,
)

N_INPUTS = 4          # input words per thread (a, b, c, d)

# A clear refusal of a program larger than the machine (documented limits, no spilling) is
# not a failure; it is counted apart.
LIMIT_MESSAGES = ("usable registers per lane", "the program ROM holds")


@dataclass
class CaseResult:
    seed: int
    status: str   # ok | over_limits | mismatch | crash | compile_error | launch_error
    detail: str = ""
    program: Program | None = None
    inputs: list[list[int]] = field(default_factory=list)


def edge_value(rng: random.Random) -> int:
    """A 32-bit input value, biased towards the edges where integer bugs live."""
    pick = rng.random()
    if pick < 0.35:
        return rng.choice([0, 1, -1, 2, -2, 3, 31, 32, 33, 0x7FFFFFFF, -0x80000000,
                           0x7FFFFFFE, -0x7FFFFFFF, 0xFFFF, 0x10000, -0x10000, 255, 7])
    if pick < 0.7:
        return rng.randint(-100, 100)
    return rng.randint(-2**31, 2**31 - 1)


def make_inputs(rng: random.Random, threads: int) -> list[list[int]]:
    return [[edge_value(rng) for _ in range(N_INPUTS)] for _ in range(threads)]


def run_program_qgpu(program: Program, inputs: list[list[int]], grid: int, block: int):
    """The program's outputs per thread on qgpu (compile + interpreter launch)."""
    threads = grid * block
    flat = np.array([v for row in inputs for v in row], dtype=np.int64)
    in_array = (flat & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    out_array = np.zeros(threads * program.n_outputs, dtype=np.int32)
    module = compile_cuda(program.source())
    module.get_function(program.name)(grid, block, [in_array, out_array])
    return out_array.reshape(threads, program.n_outputs).tolist()


def case_setup(seed: int):
    """The seed's program, grid, block and per-thread inputs."""
    rng = random.Random(seed)
    program = generate_program(rng)
    grid = rng.choice([1, 1, 1, 2])
    block = rng.randint(1, 8 if grid == 1 else 4)
    return program, grid, block, make_inputs(rng, grid * block)


def run_case(seed: int, runner=run_program_qgpu) -> CaseResult:
    program, grid, block, inputs = case_setup(seed)
    return check_program(seed, program, grid, block, inputs, runner)


def check_program(seed, program, grid, block, inputs, runner=run_program_qgpu) -> CaseResult:
    result = CaseResult(seed, "ok", program=program, inputs=inputs)
    expected = [run_program_python(program, row, t) for t, row in enumerate(inputs)]
    try:
        got = runner(program, inputs, grid, block)
    except QgpuError as exc:
        kind = "compile_error" if "Compile" in type(exc).__name__ else "launch_error"
        if any(limit in str(exc) for limit in LIMIT_MESSAGES):
            kind = "over_limits"
        result.status, result.detail = kind, f"{type(exc).__name__}: {exc}"
        return result
    except Exception as exc:  # noqa: BLE001 - a crash is a finding
        result.status, result.detail = "crash", f"{type(exc).__name__}: {exc}"
        return result
    for t, (want, have) in enumerate(zip(expected, got, strict=True)):
        if list(want) != list(have):
            result.status = "mismatch"
            result.detail = f"thread {t} inputs {inputs[t]}: got {have}, want {want}"
            break
    return result


def _smaller(e):
    """Expressions smaller than e: its children, e with one child made smaller, 0."""
    if isinstance(e, Unary):
        yield e.arg
        for a in _smaller(e.arg):
            yield Unary(e.op, a)
    elif isinstance(e, Binary):
        yield e.left
        yield e.right
        for a in _smaller(e.left):
            yield Binary(e.op, a, e.right)
        for b in _smaller(e.right):
            yield Binary(e.op, e.left, b)
    elif isinstance(e, Ternary):
        yield e.then
        yield e.other
        for c in _smaller(e.cond):
            yield Ternary(c, e.then, e.other)
    if not (isinstance(e, Const) and e.value == 0):
        yield Const(0, e.typ)


def _smaller_programs(p: Program):
    for i in range(len(p.statements)):
        yield Program(p.statements[:i] + p.statements[i + 1:], p.outputs)
    for j in range(len(p.outputs)):
        if len(p.outputs) > 1:
            yield Program(p.statements, p.outputs[:j] + p.outputs[j + 1:])
        for e in _smaller(p.outputs[j]):
            yield Program(p.statements, p.outputs[:j] + [e] + p.outputs[j + 1:])
    for i, stmt in enumerate(p.statements):
        if stmt[0] == "assign":
            for e in _smaller(stmt[2]):
                yield Program(p.statements[:i] + [(stmt[0], stmt[1], e)]
                              + p.statements[i + 1:], p.outputs)


def minimise(result: CaseResult, grid: int, block: int, runner=run_program_qgpu,
             max_tries: int = 400) -> CaseResult:
    """Greedily shrink a failing case's program while it keeps failing the same way
    (same status) on the failing thread's inputs alone."""
    thread = int(result.detail.split()[1]) if result.status == "mismatch" else 0
    inputs = [result.inputs[thread]]
    best = check_program(result.seed, result.program, 1, 1, inputs, runner)
    if best.status != result.status:          # needs its neighbours: keep the launch
        inputs, grid_, block_ = result.inputs, grid, block
        best = result
    else:
        grid_, block_ = 1, 1
    tries, improved = 0, True
    while improved and tries < max_tries:
        improved = False
        for candidate in _smaller_programs(best.program):
            tries += 1
            trial = check_program(result.seed, candidate, grid_, block_, inputs, runner)
            if trial.status == result.status:
                best, improved = trial, True
                break
            if tries >= max_tries:
                break
    return best


def fuzz(cases: int, seed: int, runner=run_program_qgpu, progress: bool = False):
    """Run `cases` seeded cases; returns the list of CaseResults."""
    results, bad = [], 0
    with progress_bar(total=cases, desc="fuzz cuda", unit="case", enabled=progress,
                      leave=True) as bar:
        for i in range(cases):
            results.append(run_case(seed * 1_000_003 + i, runner))
            bad += results[-1].status not in ("ok", "over_limits")
            bar.set_postfix_str(f"{bad} failures", refresh=False)
            bar.update()
    return results


FUZZ_PARAMS = [{"name": "in", "ctype": "const int*", "pointer": True, "unsigned": False},
               {"name": "out", "ctype": "int*", "pointer": True, "unsigned": False}]


def _i32_array(values) -> np.ndarray:
    return (np.array(values, dtype=np.int64).ravel() & 0xFFFFFFFF).astype(
        np.uint32).view(np.int32)


def fuzz_reference(cases: int, seed: int, runner=run_program_qgpu) -> dict:
    """A qgpu.validate reference document of fuzz programs (oracle: the C-semantics
    evaluation; interpreter: qgpu), so that `qgpu validate-gpu --reference` checks both
    against a real GPU. Programs that qgpu refuses are left out."""
    kernels, entries = {}, []
    for i in range(cases):
        case_seed = seed * 1_000_003 + i
        program, grid, block, inputs = case_setup(case_seed)
        result = check_program(case_seed, program, grid, block, inputs, runner)
        if result.status not in ("ok", "mismatch"):
            continue
        name = f"fuzz_{case_seed}"
        kernels[name] = {"entry": program.name, "source": program.source(),
                         "params": FUZZ_PARAMS}
        threads = grid * block
        expected = [run_program_python(program, row, t) for t, row in enumerate(inputs)]
        interp = runner(program, inputs, grid, block)
        in_array = encode_array(_i32_array(inputs))
        zeros = encode_array(np.zeros(threads * program.n_outputs, np.int32))
        entries.append(program_case(
            name, grid, block, {"in": in_array, "out": zeros},
            {"in": in_array, "out": encode_array(_i32_array(expected))},
            {"in": in_array, "out": encode_array(_i32_array(interp))}))
    return reference_document("interp (fuzz programs)", kernels, entries)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--host-check", action="store_true",
                        help="compare the Python evaluator with clang-19 host code instead")
    parser.add_argument("--show", type=int, default=5, help="failures to print in full")
    parser.add_argument("--minimise", action="store_true",
                        help="also print a greedily shrunk program for each failure shown")
    parser.add_argument("--reference", metavar="FILE",
                        help="write the cases as a `qgpu validate-gpu --reference` file")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.reference:
        document = fuzz_reference(args.cases, args.seed)
        save_reference(document, args.reference)
        print(f"{args.reference}: {len(document['cases'])} fuzz cases")
        return 0
    if args.host_check:
        rng = random.Random(args.seed)
        failures = 0
        for i in range(args.cases):
            program = generate_program(rng)
            inputs = make_inputs(rng, 4)
            problem = host_check(program, inputs)
            if problem:
                failures += 1
                if failures <= args.show:
                    print(f"case {i}: {problem}\n{program.source()}")
        elapsed = time.perf_counter() - started
        print(f"host check: {args.cases} cases, {failures} failures, "
              f"{args.cases / elapsed:.1f} cases/s")
        return 1 if failures else 0
    results = fuzz(args.cases, args.seed, progress=True)
    elapsed = time.perf_counter() - started
    counts = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    bad = [r for r in results if r.status not in ("ok", "over_limits")]
    for r in bad[: args.show]:
        print(f"--- seed {r.seed}: {r.status}: {r.detail}\n{r.program.source()}")
        if args.minimise:
            _program, grid, block, _inputs = case_setup(r.seed)
            small = minimise(r, grid, block)
            print(f"--- minimised: {small.status}: {small.detail}\n{small.program.source()}")
    print(f"cases run: {len(results)}, failures: {len(bad)} {counts}, "
          f"rate: {len(results) / elapsed:.1f} cases/s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
