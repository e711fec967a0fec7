"""fuzz.model_launches: differential fuzzing of the compiled model (the machine in the weights)
against the reference interpreter.

Two sources of launches:
- "isa": random machine programs (qgpu/fuzz/model_programs.py: random operations of
  the model machine, forwarded/register/immediate operands, divergent branches, bounded
  loops, early exits, a barrier, memory operations at aligned in-bounds addresses) with
  random global memory; a --high-blocks share placed at blocks 48..127 (mostly in CTAs
  of several warps: barriers past block 64, issue 36);
- "cuda": the CUDA fuzzer's random kernels (qgpu/fuzz/cuda_lang.py) compiled by
  the front end, with edge-value inputs; their outputs are also compared with the
  fuzzer's C-semantics evaluation.
Each launch runs on the model with checking -- teacher forced (runtime.check.
forced_launch, the default) or generated (runtime.generate_many over a batch's
launches, + check_trace) -- and on the
interpreter: the tokens must be equal and the global memory read from the model's state
must equal the interpreter's. A --multi-warp share of the launches (default 1/4) uses
2-4 warps or 2-4 CTAs. Launches the model machine refuses (spec.check_launch) are
counted with their reason, not hidden.

  python -m qgpu.fuzz.model_launches --cases 2000 --seed 1 [--mode forced|generate]
      [--source isa|cuda|both] [--multi-warp 0.25] [--high-blocks 0.1] [--max-blocks 12]
      [--max-memory 128]
      [--minimise] [--show 3] [--outcomes FILE] [--ray [ADDRESS] [--ray-workers 2]]

Prints cases run, passed, refused (by reason), mismatches, tokens (prompt and trace) and
time; exit status 1 on any mismatch, fault or crash. SIGINT or SIGTERM stops the campaign
early and prints the summary of the cases run. The machine is compiled (or loaded from
the disk cache) once per process: load_machine(). --ray runs the cases in batches on Ray
(qgpu.campaign: a local Ray of --ray-workers CPUs, or the cluster at ADDRESS), each
worker process loading the machine once: the same cases, verdicts and order as here.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from qgpu.campaign import LocalPool, add_arguments, batch_size, batched, open_pool
from qgpu.circuit.machine.spec import check_launch
from qgpu.cuda import compile as compile_cuda
from qgpu.errors import CheckMismatch, LaunchError, MachineError, ProgramError, QgpuError
from qgpu.files import atomic_write
from qgpu.fuzz.cuda_kernels import make_inputs
from qgpu.fuzz.cuda_lang import generate_program, run_program_python
from qgpu.fuzz.model_programs import Case, random_case
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.asm import disassemble
from qgpu.isa.program import Block, Program
from qgpu.protocol import expected_trace
from qgpu.runtime.check import check_trace, forced_launch
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch
from qgpu.runtime.generate_many import LaunchJob, generate_many

PASSING = ("ok", "refused")


@dataclass
class Outcome:
    source: str          # isa | cuda
    seed: int
    status: str          # ok | refused | mismatch | fault | crash
    detail: str = ""
    prompt_tokens: int = 0
    trace_tokens: int = 0
    case: Case | None = None
    extra: dict = field(default_factory=dict)


def reason(exc: Exception) -> str:
    """A refusal's reason with its numbers blanked (refusals are counted by reason)."""
    text = re.sub(r"\d+", "N", str(exc).split(" (it runs")[0])
    return f"{type(exc).__name__}: {text}"


def check_on_model(machine, case: Case, mode: str = "forced") -> Outcome:
    """One launch on the model, checked against the interpreter (tokens and memory)."""
    out = Outcome("isa", 0, "ok", case=case)
    want = _reference(machine, case, out)
    if want is None:
        return out
    program, grid, block, memory = case.program, case.grid, case.block, case.memory
    if mode == "forced":
        return _judge(out, case, lambda: forced_launch(machine, program, grid, block, memory),
                      checked=True)
    return _judge(out, case, lambda: generate_launch(machine, program, grid, block, memory,
                                                     max_tokens=len(want) + 64))


def _reference(machine, case: Case, out: Outcome) -> list[int] | None:
    """The interpreter's trace of the case, or None with the verdict in `out` (the
    machine refuses the launch; the interpreter faults: the generator's bug)."""
    try:
        check_launch(machine.spec, case.program, case.grid, case.block)
    except (LaunchError, ProgramError) as exc:
        out.status, out.detail = "refused", reason(exc)
        return None
    try:
        res = run_launch(case.program, case.grid, case.block, memory=list(case.memory) or None,
                         sizes=limits.MODEL_MEMORY)
    except MachineError as exc:
        out.status, out.detail = "fault", f"interpreter: {exc}"
        return None
    return expected_trace(res.events)


def _judge(out: Outcome, case: Case, attempt, checked: bool = False) -> Outcome:
    """The verdict on the model's run that attempt() returns (checked: attempt compared
    it with the interpreter already, as forced_launch does)."""
    try:
        run = attempt()
        if not checked:
            check_trace(case.program, case.grid, case.block, case.memory, run.prompt,
                        run.trace, run.memory)
        out.prompt_tokens, out.trace_tokens = len(run.prompt), len(run.trace)
        out.extra["memory"] = run.memory
    except CheckMismatch as exc:
        out.status, out.detail = "mismatch", str(exc)
    except QgpuError as exc:  # the model ran away (generation) or wrote a bad token
        out.status, out.detail = "mismatch", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 - a crash is a finding
        out.status, out.detail = "crash", f"{type(exc).__name__}: {exc}"
    return out


@dataclass
class Built:
    """A campaign case before the model: its launch (None when the front end refused
    it: then `outcome` says so), and what completes its outcome after the model."""
    case: Case | None
    finish: Callable[[Outcome], Outcome]
    outcome: Outcome | None = None


def isa_case(machine, seed: int, **gen) -> Built:
    case = random_case(random.Random(seed), machine.spec.op_names, **gen)

    def finish(out: Outcome) -> Outcome:
        out.seed = seed
        return out
    return Built(case, finish)


def cuda_case(machine, seed: int, multi_warp: float = 0.03) -> Built:
    """A CUDA fuzzer kernel (front end) on the model; outputs also against C semantics."""
    rng = random.Random(seed)
    source = generate_program(rng)
    if rng.random() < multi_warp:
        grid, block = rng.choice(((2, 4), (1, 8), (2, 2)))
    else:
        grid, block = 1, rng.randint(1, 4)
    inputs = make_inputs(rng, grid * block)
    flat = np.array([v for row in inputs for v in row], dtype=np.int64)
    in_array = (flat & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    out_array = np.zeros(grid * block * source.n_outputs, dtype=np.int32)
    try:
        kernel = compile_cuda(source.source()).get_function(source.name)
        program, memory, layout, _arrays = kernel.link(grid, block, [in_array, out_array])
    except QgpuError as exc:  # the front end refuses (e.g. over the register file)
        refused = Outcome("cuda", seed, "refused", "front end: " + reason(exc))
        return Built(None, lambda out: out, refused)

    def finish(out: Outcome) -> Outcome:
        out.source, out.seed, out.extra["cuda"] = "cuda", seed, source.source()
        if out.status == "ok":
            base, n = layout["out"]
            got = np.array(out.extra["memory"][base:base + n], np.uint32).view(np.int32)
            want = [v for t, row in enumerate(inputs)
                    for v in run_program_python(source, row, t)]
            if got.tolist() != want:
                out.status = "mismatch"
                out.detail = f"outputs {got.tolist()} != C semantics {want}"
        return out
    return Built(Case(program, grid, block, list(memory)), finish)


# --- minimising a failing machine program -------------------------------------------------


def _rebuild(program: Program, blocks: list[Block]) -> Program | None:
    try:
        return Program(blocks, name=program.name)
    except ProgramError:
        return None


def _smaller(case: Case):
    """Cases one step smaller: one instruction dropped, fewer lanes, no memory."""
    prog = case.program
    for b, blk in enumerate(prog.blocks):
        for s in range(len(blk.stages)):
            stages = blk.stages[:s] + blk.stages[s + 1:]
            defs = {i.dst for st in stages for i in st if i.dst is not None}
            wb = None if blk.writeback is None else frozenset(blk.writeback & defs)
            blocks = [Block([list(st) for st in x.stages], x.terminator, x.writeback)
                      for x in prog.blocks]
            blocks[b] = Block(stages, blk.terminator, wb)
            smaller = _rebuild(prog, blocks)
            if smaller is not None:
                yield Case(smaller, case.grid, case.block, case.memory)
    if case.block > 1:
        yield Case(prog, case.grid, case.block - 1, case.memory)
    if any(case.memory):
        yield Case(prog, case.grid, case.block, [])


def minimise(machine, case: Case, mode: str, max_tries: int = 300) -> Case:
    """Greedily shrink a mismatching case while it still mismatches."""
    best, tries, improved = case, 0, True
    while improved and tries < max_tries:
        improved = False
        for candidate in _smaller(best):
            tries += 1
            if check_on_model(machine, candidate, mode).status == "mismatch":
                best, improved = candidate, True
                break
            if tries >= max_tries:
                break
    return best


def describe(case: Case) -> str:
    return (f"grid {case.grid} block {case.block} memory {case.memory}\n"
            + disassemble(case.program))


# --- the campaign ------------------------------------------------------------------------


def build_case(machine, seed: int, index: int, source: str = "isa",
               multi_warp: float = 0.03, **gen) -> Built:
    """Case `index` of the campaign of `seed` (source "both": every fourth one from the
    CUDA fuzzer): the same case wherever and in whatever order it runs."""
    case_seed = seed * 1_000_003 + index
    if source == "cuda" or (source == "both" and index % 4 == 3):
        return cuda_case(machine, case_seed, multi_warp=multi_warp)
    return isa_case(machine, case_seed, multi_warp=multi_warp, **gen)


def run_case(machine, seed: int, index: int, mode: str = "forced", source: str = "isa",
             multi_warp: float = 0.03, **gen) -> Outcome:
    """Case `index` of the campaign of `seed` (build_case), checked on the model alone."""
    built = build_case(machine, seed, index, source, multi_warp, **gen)
    if built.outcome is not None:
        return built.outcome
    return built.finish(check_on_model(machine, built.case, mode))


def run_cases(machine, indices, seed: int, mode: str, source: str, multi_warp: float,
              gen: dict) -> list[Outcome]:
    """A batch of the campaign (campaign's task): run_case for each index, in order; in
    generate mode the batch's launches go through runtime.generate_many (each its own
    state; the engine's way of stepping several), the same verdicts as one at a time."""
    if mode != "generate":
        return [run_case(machine, seed, i, mode, source, multi_warp, **gen) for i in indices]
    built = [build_case(machine, seed, i, source, multi_warp, **gen) for i in indices]
    outcomes: list[Outcome | None] = [b.outcome for b in built]
    pending: list[tuple[int, list[int]]] = []
    for k, b in enumerate(built):
        if b.outcome is None:
            outcomes[k] = Outcome("isa", 0, "ok", case=b.case)
            want = _reference(machine, b.case, outcomes[k])
            if want is not None:
                pending.append((k, want))
    jobs = [LaunchJob(built[k].case.program, built[k].case.grid, built[k].case.block,
                      built[k].case.memory, max_tokens=len(want) + 64) for k, want in pending]
    runs = generate_many(machine, jobs, show_progress=False)
    for (k, _want), run in zip(pending, runs, strict=True):
        _judge(outcomes[k], built[k].case, partial(_returned, run))
    return [b.finish(out) if b.outcome is None else out
            for b, out in zip(built, outcomes, strict=True)]


def _returned(run):
    """generate_many's entry as generate_launch gives it: the run, or its error raised."""
    if isinstance(run, Exception):
        raise run
    return run


def worker_machine():
    """The machine a campaign worker loads once (campaign's setup)."""
    return load_machine(progress=False)


def fuzz(machine, cases: int, seed: int, mode: str = "forced", source: str = "isa",
         progress: bool = False, multi_warp: float = 0.03, pool=None, **gen) -> list[Outcome]:
    """`cases` seeded cases (run_case) on `machine`, or, with a campaign pool (qgpu.campaign:
    on Ray; machine None), in batches on its workers, each of which loads the machine
    once: the same outcomes in the same order. With progress, an interrupt (SIGINT, or
    SIGTERM under main) ends the campaign early with the batches finished so far."""
    task = partial(run_cases, seed=seed, mode=mode, source=source, multi_warp=multi_warp,
                   gen=gen)
    if pool is None:
        pool = LocalPool()
    batches = batched(range(cases), batch_size(cases, pool.workers))
    setup = worker_machine if machine is None else (lambda: machine)
    results, count = [], {"bad": 0, "tokens": 0}

    def postfix(outcomes: list[Outcome]) -> str:
        count["bad"] += sum(r.status not in PASSING for r in outcomes)
        count["tokens"] += sum(r.prompt_tokens + r.trace_tokens for r in outcomes)
        return f"{count['bad']} failures, {count['tokens']:,} tokens"

    try:
        for outcomes in pool.map(task, batches, setup, desc=f"fuzz model ({mode})",
                                 unit="case", progress=progress, postfix=postfix):
            results.extend(outcomes)
    except KeyboardInterrupt:
        if not progress:
            raise
        print(f"  interrupted after {len(results)} cases", file=sys.stderr, flush=True)
    return results


def summary(results: list[Outcome], seconds: float) -> str:
    status = Counter(r.status for r in results)
    refused = Counter(r.detail for r in results if r.status == "refused")
    prompt = sum(r.prompt_tokens for r in results)
    trace = sum(r.trace_tokens for r in results)
    by_source = Counter(r.source for r in results)
    multi = sum(1 for r in results if r.status == "ok" and r.case is not None
                and limits.launch_warps(r.case.grid, r.case.block) > 1)
    lines = [f"cases run: {len(results)} ({dict(by_source)}), passed: {status['ok']} "
             f"({multi} of them over more than one warp), "
             f"refused: {status['refused']}, mismatches: {status['mismatch']}, "
             f"faults: {status['fault']}, crashes: {status['crash']}",
             f"tokens: {prompt + trace} ({prompt} prompt, {trace} trace), time {seconds:.1f} s, "
             f"{(prompt + trace) / seconds:.0f} tokens/s, {len(results) / seconds:.2f} cases/s"]
    lines += [f"  refused {n}: {why}" for why, n in refused.most_common()]
    return "\n".join(lines)


def write_outcomes(path: str, results: list[Outcome]) -> None:
    """One JSON line per case, in the campaign's order (--outcomes)."""
    lines = [json.dumps({"source": r.source, "seed": r.seed, "status": r.status,
                         "prompt_tokens": r.prompt_tokens, "trace_tokens": r.trace_tokens,
                         "detail": r.detail}) + "\n" for r in results]
    with atomic_write(path) as tmp:
        tmp.write_text("".join(lines))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=("forced", "generate"), default="forced",
                        help="check by teacher forcing (default) or after generation")
    parser.add_argument("--source", choices=("isa", "cuda", "both"), default="both")
    parser.add_argument("--multi-warp", type=float, default=0.25,
                        help="share of launches over one warp (up to 4 warps, 4 CTAs)")
    parser.add_argument("--high-blocks", type=float, default=0.1,
                        help="share of random machine programs placed at blocks 48..127, "
                             "mostly in CTAs of several warps (0 gives the cases of "
                             "campaigns before this option)")
    parser.add_argument("--max-blocks", type=int, default=12,
                        help="blocks of a random machine program (+ its exit block), <= 31")
    parser.add_argument("--max-memory", type=int, default=128,
                        help="words of a random initial global memory, <= 128")
    parser.add_argument("--show", type=int, default=3, help="failures to print in full")
    parser.add_argument("--minimise", action="store_true",
                        help="also print a greedily shrunk program for each isa failure shown")
    parser.add_argument("--outcomes", metavar="FILE",
                        help="also write one JSON line per case (source, seed, status, "
                             "tokens, detail): campaigns compared with diff")
    add_arguments(parser)
    args = parser.parse_args(argv)

    def stop(_signum, _frame):  # SIGTERM (as SIGINT) ends the campaign with a summary
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t0 = time.perf_counter()
    try:
        pool = open_pool(args.ray, args.ray_workers)
    except QgpuError as exc:
        print(f"qgpu.fuzz.model_launches: error: {exc}", file=sys.stderr)
        return 2
    with pool:
        # on Ray the workers load the machine (once each); the driver only if it minimises
        machine = load_machine() if args.ray is None else None
        loaded = time.perf_counter() - t0
        started = time.perf_counter()
        results = fuzz(machine, args.cases, args.seed, args.mode, args.source, progress=True,
                       multi_warp=args.multi_warp, max_blocks=args.max_blocks,
                       max_memory=args.max_memory, high=args.high_blocks, pool=pool)
        elapsed = time.perf_counter() - started
        spread = getattr(pool, "worker_batches", None)
    if args.outcomes:
        write_outcomes(args.outcomes, results)
    bad = [r for r in results if r.status not in PASSING]
    for r in bad[:args.show]:
        print(f"--- {r.source} seed {r.seed}: {r.status}: {r.detail}")
        if r.case is not None:
            print(r.extra.get("cuda", "") + describe(r.case))
            if args.minimise and r.status == "mismatch":
                machine = machine or load_machine()
                print("--- minimised:\n" + describe(minimise(machine, r.case, args.mode)))
    if spread is None:
        print(f"machine loaded in {loaded:.1f} s; mode {args.mode}")
    else:
        print(f"Ray ready in {loaded:.1f} s ({pool.workers} CPUs); batches per worker "
              f"process: {', '.join(f'{w} {n}' for w, n in sorted(spread.items()))}; "
              f"mode {args.mode}")
    print(summary(results, elapsed))
    return 1 if bad else 0


if __name__ == "__main__":
    # main of the imported module, not of __main__: Ray's workers import the campaign's
    # functions by their module's name
    from qgpu.fuzz import model_launches

    sys.exit(model_launches.main())
