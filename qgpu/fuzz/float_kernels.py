"""fuzz.float_kernels: differential fuzzing of float32 through the whole front end.

Random float expressions (fuzz.float_lang: + - * / with clang's contraction, fmaf, the
__f*_rn intrinsics, sqrtf, fminf/fmaxf, fabsf, -x, comparisons ordered and unordered,
?:, rintf/truncf/floorf/ceilf, (int)x, (float)i, __float2int_rn/rz/rd/ru,
__int_as_float/__float_as_int) over edge and random operands are compiled by qgpu
(clang-19 -> PTX -> machine program), run on the reference interpreter (or on the model
with --engine model-check: generated and compared token by token with the interpreter),
and compared bit for bit with the same expressions built natively for this CPU by
clang++-19 (fuzz.float_lang.run_host: fma exactly where clang contracts, the GPU's
canonical NaN, PTX's min/max and conversion rules). A NaN whose payload the C side cannot
know is compared as "both NaN" and counted (see fuzz.float_lang).

  python -m qgpu.fuzz.float_kernels --cases 2000 --seed 1          # prints counts, rate
  python -m qgpu.fuzz.float_kernels --cases 20 --engine model-check # a sample on the model
  python -m qgpu.fuzz.float_kernels --cases 50 --reference f.json   # for qgpu validate-gpu

A --barriers share (default 0.2) of the kernels has __syncthreads() after each output, in
CTAs of 2-4 warps: barriers after long float code, at high block numbers (issue 36).
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from qgpu.cuda import compile as compile_cuda
from qgpu.errors import QgpuError
from qgpu.fuzz.float_host import run_host
from qgpu.fuzz.float_lang import (
    Program,
    float_of,
    generate_program,
    is_nan,
    make_inputs,
)
from qgpu.isa import limits
from qgpu.progress import progress as progress_bar
from qgpu.validate.reference import (
    encode_array,
    program_case,
    reference_document,
    save_reference,
)

# a clear refusal of a program larger than the machine is counted apart, not a failure
LIMIT_MESSAGES = ("usable registers per lane", "the program ROM holds")
HOST_BATCH = 25        # cases per native oracle build (one clang++ run each)


@dataclass
class CaseResult:
    seed: int
    status: str     # ok | over_limits | mismatch | crash | compile_error | launch_error
    detail: str = ""
    program: Program | None = None
    grid: int = 1
    block: int = 1
    inputs: list = field(default_factory=list)
    both_nan: int = 0        # float outputs where both sides are NaN with other bits
    nan_bits_skipped: int = 0  # int outputs that took a NaN's bits, not compared
    outputs: int = 0
    got: list = field(default_factory=list)    # qgpu's (float bits, ints) per thread
    want: list = field(default_factory=list)   # the host's (float bits, ints, nan flag)


BARRIER_SHAPES = ((1, 8), (2, 8), (1, 16))  # CTAs of 2 and 4 warps (issue 36's launches)


def case_setup(seed: int, model: bool = False, barriers: float = 0.0):
    """The seed's program, grid, block and inputs (model: a program the model runs, one
    warp of 4 threads at most: float operations cost the model ~1,000 tokens each). A
    `barriers` share: the kernel with __syncthreads() after each output, in CTAs of 2-4
    warps (drawn after the rest: barriers=0 gives the cases campaigns always had)."""
    rng = random.Random(seed)
    program = generate_program(rng, model)
    grid = 1 if model else rng.choice([1, 1, 2])
    block = rng.randint(1, 4 if model or grid > 1 else 8)
    inputs = make_inputs(rng, grid * block)
    if barriers and rng.random() < barriers:
        program = replace(program, barriers=True)
        per_thread = 5 + len(program.float_outputs) + len(program.int_outputs)
        grid, block = rng.choice([(g, b) for g, b in BARRIER_SHAPES  # the arrays fit
                                  if g * b * per_thread + 1 <= limits.MODEL_GLOBAL_WORDS])
        inputs = (inputs + make_inputs(rng, grid * block))[:grid * block]
    return program, grid, block, inputs


def launch_arrays(program: Program, inputs):
    threads = len(inputs)
    f = np.array([v & 0xFFFFFFFF for fs, _ in inputs for v in fs], np.uint32).view(np.float32)
    n = np.array([v & 0xFFFFFFFF for _, ns in inputs for v in ns], np.uint32).view(np.int32)
    fo = np.zeros(threads * len(program.float_outputs), np.float32)
    io = np.zeros(max(1, threads * len(program.int_outputs)), np.int32)
    return [f, n, fo, io]


def run_qgpu(program: Program, inputs, grid: int, block: int, engine: str = "interp"):
    """Per thread (float output bits, int outputs) on qgpu."""
    arrays = launch_arrays(program, inputs)
    fn = compile_cuda(program.source()).get_function(program.name)
    if engine == "interp":
        fn(grid, block, arrays)
    else:
        fn(grid, block, arrays, engine=engine)
    nf, ni = len(program.float_outputs), len(program.int_outputs)
    fo, io = arrays[2].view(np.uint32).tolist(), arrays[3].tolist()
    return [(fo[t * nf:(t + 1) * nf], io[t * ni:(t + 1) * ni]) for t in range(len(inputs))]


def _show(bits: int) -> str:
    return f"0x{bits:08x} ({float_of(bits)!r})"


def compare(result: CaseResult, got, want) -> CaseResult:
    """Bit-for-bit comparison of qgpu's outputs with the host's, NaN rules applied."""
    for t, ((gf, gi), (wf, wi, nan_bits)) in enumerate(zip(got, want, strict=True)):
        for k, (g, w) in enumerate(zip(gf, wf, strict=True)):
            result.outputs += 1
            if g == w:
                continue
            if is_nan(g) and is_nan(w):
                result.both_nan += 1
                continue
            result.status = "mismatch"
            result.detail = (f"thread {t} float output {k}: got {_show(g)}, want {_show(w)}; "
                             f"inputs {[hex(v) for v in result.inputs[t][0]]} "
                             f"{result.inputs[t][1]}")
            return result
        for k, (g, w) in enumerate(zip(gi, wi, strict=True)):
            result.outputs += 1
            if g == w:
                continue
            if nan_bits:
                result.nan_bits_skipped += 1
                continue
            result.status = "mismatch"
            result.detail = (f"thread {t} int output {k}: got {g}, want {w}; inputs "
                             f"{[hex(v) for v in result.inputs[t][0]]} {result.inputs[t][1]}")
            return result
    return result


def run_batch(seeds: list[int], engine: str = "interp", runner=run_qgpu,
              barriers: float = 0.0) -> list[CaseResult]:
    """The seeds' cases: one native oracle build for all of them, then qgpu case by case."""
    setups = [case_setup(s, model=engine != "interp", barriers=barriers) for s in seeds]
    want = run_host([(p, inputs) for p, _g, _b, inputs in setups])
    results = []
    for seed, (program, grid, block, inputs), host in zip(seeds, setups, want, strict=True):
        result = CaseResult(seed, "ok", program=program, grid=grid, block=block,
                            inputs=inputs)
        try:
            got = runner(program, inputs, grid, block, engine)
        except QgpuError as exc:
            kind = "compile_error" if "Compile" in type(exc).__name__ else "launch_error"
            if any(m in str(exc) for m in LIMIT_MESSAGES):
                kind = "over_limits"
            result.status, result.detail = kind, f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # noqa: BLE001 - a crash is a finding
            result.status, result.detail = "crash", f"{type(exc).__name__}: {exc}"
        else:
            result.got, result.want = got, host
            compare(result, got, host)
        results.append(result)
    return results


def fuzz(cases: int, seed: int, engine: str = "interp", progress: bool = False,
         runner=run_qgpu, log=None, barriers: float = 0.0) -> list[CaseResult]:
    """Run `cases` seeded cases (in batches of HOST_BATCH, one oracle build each). log:
    called with a line after every batch. KeyboardInterrupt (SIGINT, or SIGTERM in
    main) ends the campaign: the cases of the batches completed are returned."""
    seeds = [seed * 1_000_003 + i for i in range(cases)]
    results: list[CaseResult] = []
    with progress_bar(total=cases, desc=f"fuzz float ({engine})", unit="case",
                      enabled=progress, leave=True) as bar:
        try:
            for start in range(0, cases, HOST_BATCH):
                batch = run_batch(seeds[start:start + HOST_BATCH], engine, runner, barriers)
                results += batch
                bar.update(len(batch))
                bad = sum(r.status not in ("ok", "over_limits") for r in results)
                bar.set_postfix_str(f"{bad} failures", refresh=False)
                if log:
                    log(f"{len(results)} cases, {bad} failures")
        except KeyboardInterrupt:
            if log:
                log(f"stopped after {len(results)} cases")
    return results


def summary(results: list[CaseResult]) -> dict:
    counts = Counter(r.status for r in results)
    return {"cases": len(results), "statuses": dict(counts),
            "outputs": sum(r.outputs for r in results),
            "both_nan": sum(r.both_nan for r in results),
            "nan_bits_skipped": sum(r.nan_bits_skipped for r in results),
            "failures": sum(r.status not in ("ok", "over_limits") for r in results)}


FUZZ_PARAMS = [
    {"name": "f", "ctype": "const float*", "pointer": True, "unsigned": False,
     "dtype": "float32"},
    {"name": "n", "ctype": "const int*", "pointer": True, "unsigned": False, "dtype": "int32"},
    {"name": "fo", "ctype": "float*", "pointer": True, "unsigned": False, "dtype": "float32"},
    {"name": "io", "ctype": "int*", "pointer": True, "unsigned": False, "dtype": "int32"}]


def _outputs(args: dict, rows) -> dict:
    """A reference case's final arrays: the inputs, and fo/io from per-thread rows."""
    fo = np.array([v for row in rows for v in row[0]], np.uint32).view(np.float32)
    io = np.array([v for row in rows for v in row[1]] or [0], np.int64)
    return dict(args, fo=encode_array(fo),
                io=encode_array((io & 0xFFFFFFFF).astype(np.uint32).view(np.int32)))


def fuzz_reference(cases: int, seed: int, runner=run_qgpu) -> dict:
    """A qgpu.validate reference document of float fuzz programs (oracle: the native host
    build; interp: qgpu), for `qgpu validate-gpu --reference`. Only cases that ran and
    matched bit for bit (no "both NaN" relaxation) are kept, so that the GPU is compared
    with one exact answer."""
    kernels, entries = {}, []
    for r in fuzz(cases, seed, runner=runner):
        if r.status != "ok" or r.both_nan or r.nan_bits_skipped:
            continue
        name = f"ffuzz_{r.seed}"
        kernels[name] = {"entry": r.program.name, "source": r.program.source(),
                         "params": FUZZ_PARAMS, "float": True}
        args = {k: encode_array(v) for k, v in zip(
            ("f", "n", "fo", "io"), launch_arrays(r.program, r.inputs), strict=True)}
        entries.append(program_case(name, r.grid, r.block, args, _outputs(args, r.want),
                                    _outputs(args, r.got)))
    return reference_document("interp (float fuzz programs)", kernels, entries)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", default="interp",
                        help="interp (default) or model-check / model-forced (the model, "
                             "compared token by token with the interpreter)")
    parser.add_argument("--barriers", type=float, default=0.2,
                        help="share of kernels with __syncthreads() after each output, in "
                             "CTAs of 2-4 warps (0 gives the cases of campaigns before "
                             "this option)")
    parser.add_argument("--show", type=int, default=5, help="failures to print in full")
    parser.add_argument("--reference", metavar="FILE",
                        help="write the cases as a `qgpu validate-gpu --reference` file")
    args = parser.parse_args(argv)
    if args.engine != "interp":
        import qgpu.runtime  # noqa: F401 - registers the model's engines
    started = time.perf_counter()
    if args.reference:
        document = fuzz_reference(args.cases, args.seed)
        save_reference(document, args.reference)
        print(f"{args.reference}: {len(document['cases'])} float fuzz cases")
        return 0
    def stop(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    results = fuzz(args.cases, args.seed, args.engine, progress=True,
                   log=lambda line: print(f"[{time.strftime('%H:%M:%S')}] {line}",
                                          file=sys.stderr, flush=True),
                   barriers=args.barriers)
    elapsed = time.perf_counter() - started
    s = summary(results)
    for r in [r for r in results if r.status not in ("ok", "over_limits")][: args.show]:
        print(f"--- seed {r.seed}: {r.status}: {r.detail}\n{r.program.source()}")
    print(f"cases run: {s['cases']} ({s['outputs']} outputs), failures: {s['failures']} "
          f"{s['statuses']}, both NaN: {s['both_nan']}, NaN bits not compared: "
          f"{s['nan_bits_skipped']}, rate: {len(results) / elapsed:.1f} cases/s")
    return 1 if s["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
