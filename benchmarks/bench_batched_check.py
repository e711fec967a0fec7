"""Speed of the teacher-forced check (`--check --forced`: runtime.check.forced_launch,
whose model pass is the batched kernel, fast_batch.c) over the kernel suite on the
compiled machine (`load_machine()`).

For every suite launch (or --names, --limit), forced_launch runs the interpreter, feeds
prompt + the interpreter's trace through the model in chunks (each chunk one batched
native call), checks every greedy token against the trace and the memory read from the
model's state against the interpreter's. Prints per launch and in total: tokens (prompt
and trace), the model pass's tokens/s (prompt + trace tokens over the model's seconds;
trace tokens alone too), the interpreter's seconds, the whole check's wall seconds, and
the load average (the machine is shared). --jobs 2 checks two launches at a time (two
threads: the native kernel releases the GIL, each thread has its own scratch); the
script's wall time is then the figure. --compare N also times the per-token kernel
(qgpu_forward_forced) on the first N launches, to compare on the same tokens. --phases
also prints where the batched kernel's time goes, by its own clock (each phase's share of
the model pass's seconds; the rest is Python between the chunks).

    python benchmarks/bench_batched_check.py [--names dot vec_add] [--limit 40]
        [--chunk 128] [--jobs 2] [--compare 10] [--phases] [--quiet]
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results import load_average, record  # noqa: E402
from qgpu import suite  # noqa: E402
from qgpu.errors import CheckMismatch, QgpuError  # noqa: E402
from qgpu.interp import run_launch  # noqa: E402
from qgpu.model.fast_native import batch_phases  # noqa: E402
from qgpu.protocol import encode_prompt, expected_trace  # noqa: E402
from qgpu.runtime.check import FORCED_CHUNK, forced_launch  # noqa: E402
from qgpu.runtime.compiled import load_machine  # noqa: E402


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def launches(names, limit):
    count = 0
    for spec in suite.load_suite():
        if names and spec.name not in names:
            continue
        for index, launch in enumerate(spec.launches):
            if limit is not None and count >= limit:
                return
            count += 1
            yield spec, index, launch


def per_token_seconds(engine, program, grid, block, memory, chunk) -> tuple[float, int]:
    """Seconds of the per-token kernel over prompt + trace (the same tokens)."""
    want = expected_trace(run_launch(program, grid, block, memory=list(memory)).events)
    tokens = encode_prompt(program, grid, block, list(memory)) + want[:-1]
    state = engine.new_state()
    start = time.perf_counter()
    for a in range(0, len(tokens), chunk):
        part = np.asarray(tokens[a:a + chunk])
        engine.plan.run_forced(state, part, batched=False)
        state.position += len(part)
    return time.perf_counter() - start, len(tokens)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", nargs="*", default=[])
    parser.add_argument("--limit", type=int, default=None, help="at most this many launches")
    parser.add_argument("--chunk", type=int, default=FORCED_CHUNK)
    parser.add_argument("--compare", type=int, default=0,
                        help="time the per-token kernel on the first N launches too")
    parser.add_argument("--jobs", type=int, default=1, help="launches checked at a time")
    parser.add_argument("--phases", action="store_true",
                        help="the batched kernel's seconds by phase (its own clock)")
    parser.add_argument("--quiet", action="store_true", help="totals only")
    args = parser.parse_args(argv)
    machine = load_machine(progress=False)
    engine = machine.engine
    print(f"machine: {engine.config.num_hidden_layers} layers, hidden "
          f"{engine.config.hidden_size}, backend {engine.backend}; {load()}", flush=True)
    total = dict(launches=0, tokens=0, trace=0, model=0.0, interp=0.0, wall=0.0, refused=0)
    compare = dict(tokens=0, batched=0.0, per_token=0.0)
    cases = []
    for spec, index, launch in launches(args.names, args.limit):
        grid, block = launch["grid"], launch["block"]
        function = suite.compiled_module(spec.source).get_function(spec.kernel)
        program, memory, _, _ = function.link(grid, block,
                                              suite.positional_args(spec, launch["args"]))
        cases.append((spec.case_id(index), program, grid, block, memory))

    names = batch_phases(engine.plan.lib) if args.phases else []
    phases: dict[int, np.ndarray] = {}  # per thread: the kernel adds into its own buffer

    def check(case):
        name, program, grid, block, memory = case
        if args.phases:
            buf = phases.setdefault(threading.get_ident(), np.zeros(len(names)))
            engine.plan.lib.qgpu_set_batch_profile(buf.ctypes.data)
        t0 = time.perf_counter()
        try:
            run = forced_launch(machine, program, grid, block, memory, chunk=args.chunk)
        except CheckMismatch:
            raise
        except QgpuError as err:  # refused by the machine: not counted
            return name, None, f"{type(err).__name__}: {str(err)[:80]}"
        finally:
            if args.phases:
                engine.plan.lib.qgpu_set_batch_profile(None)
        return name, run, time.perf_counter() - t0

    load_before = load_average()
    start_all = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(check, cases))
    elapsed = time.perf_counter() - start_all
    for (name, run, wall), case in zip(results, cases, strict=True):
        if run is None:
            total["refused"] += 1
            if not args.quiet:
                print(f"{name:36s} refused: {wall}")
            continue
        n = len(run.prompt) + len(run.trace)
        total["launches"] += 1
        total["tokens"] += n
        total["trace"] += len(run.trace)
        total["model"] += run.seconds
        total["wall"] += wall
        total["interp"] += max(wall - run.seconds, 0.0)
        line = (f"{name:36s} {n:6d} tok  model {n / run.seconds:8,.0f} tok/s  check "
                f"{wall:6.2f} s")
        if total["launches"] <= args.compare:
            seconds, m = per_token_seconds(engine, *case[1:], args.chunk)
            compare["tokens"] += m
            compare["batched"] += run.seconds
            compare["per_token"] += seconds
            line += f"  per-token kernel {m / seconds:6,.0f} tok/s"
        if not args.quiet:
            print(line, flush=True)
    t = total
    print(f"{t['launches']} launches checked ({t['refused']} refused by the machine): "
          f"{t['tokens']:,} tokens ({t['trace']:,} trace); model pass "
          f"{t['tokens'] / t['model']:,.0f} tok/s ({t['trace'] / t['model']:,.0f} trace tok/s, "
          f"{t['model']:.1f} s); interpreter and the rest {t['interp']:.1f} s; whole checks "
          f"{t['wall']:.1f} s; the whole run {elapsed:.1f} s wall ({t['tokens'] / elapsed:,.0f} "
          f"tok/s, {args.jobs} job(s)); {load()}")
    if not args.names and args.limit is None:   # the whole suite: the README's figure
        path = record("batched_check", [{
            "what": f"batched teacher-forced check of the whole suite ({t['launches']} "
                    f"launches, {t['tokens']:,} tokens, every token and the memory "
                    f"compared), {args.jobs} job(s), chunks of {args.chunk}",
            "figure": f"{elapsed:.1f} s wall (model pass {t['tokens'] / t['model']:,.0f} "
                      f"tokens/s)",
            "how": f"`benchmarks/bench_batched_check.py --jobs {args.jobs}`"}], load_before)
        print(f"recorded {path}")
    if phases:
        seconds = sum(phases.values())
        shares = sorted(zip(seconds.tolist(), names, strict=True), reverse=True)
        print("batched kernel by phase, share of the model pass's "
              f"{t['model']:.1f} s: " + ", ".join(
                  f"{name} {100 * sec / t['model']:.1f}%" for sec, name in shares)
              + f"; outside the kernel (Python between chunks) "
              f"{100 * (1 - seconds.sum() / t['model']):.1f}%")
    if compare["tokens"]:
        print(f"same tokens, first {args.compare} launches: batched "
              f"{compare['tokens'] / compare['batched']:,.0f} tok/s, per-token kernel "
              f"{compare['tokens'] / compare['per_token']:,.0f} tok/s "
              f"({compare['per_token'] / compare['batched']:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
