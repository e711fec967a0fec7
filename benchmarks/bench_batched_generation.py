"""Batched generation of many launches on the compiled machine (runtime.generate_many:
the launches in flight stepped together, one pass over the weights per token).

Prints, for each number of launches in flight (--in-flight, default 1 8 64), the
aggregate generated tokens/s (wall and per CPU second: the machine is shared, the load
average is printed with every figure) over the suite's launches (--launches of them,
those of the fewest program blocks, cycled so that there are at least twice as many
launches as in flight), every trace and memory compared with the interpreter's; with
--per-token, the same launches one at a time (generate_launch) for comparison; with
--suite, the whole suite generated (--jobs threads), every token and memory compared with
the interpreter's, and its wall time; with --phases, the kernel's seconds by phase
(qgpu_set_batch_profile) of the largest batch.

    .venv/bin/python benchmarks/bench_batched_generation.py [--in-flight 1 8 64]
        [--launches 64] [--jobs 1] [--per-token] [--suite] [--phases]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results import load_average, record  # noqa: E402
from qgpu.cuda.shape import launch_shape  # noqa: E402
from qgpu.errors import QgpuError  # noqa: E402
from qgpu.model.fast_native import batch_phases  # noqa: E402
from qgpu.protocol import expected_trace  # noqa: E402
from qgpu.runtime.check import check_memory, interp_launch  # noqa: E402
from qgpu.runtime.compiled import load_machine  # noqa: E402
from qgpu.runtime.generate import generate_launch  # noqa: E402
from qgpu.runtime.generate_many import LaunchJob, generate_many  # noqa: E402
from qgpu.suite import compiled_module, load_suite, positional_args  # noqa: E402


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def suite_launches() -> list[tuple[str, LaunchJob]]:
    out = []
    for spec in load_suite():
        function = compiled_module(spec.source).get_function(spec.kernel)
        for index, launch in enumerate(spec.launches):
            program, memory, _, _ = function.link(launch["grid"], launch["block"],
                                                 positional_args(spec, launch["args"]))
            shape = launch_shape(launch["grid"], launch["block"])
            out.append((spec.case_id(index),
                        LaunchJob(program, shape.ctas, shape.threads, memory)))
    return out


def reference(job: LaunchJob):
    """The interpreter's trace and final memory (None when the launch faults)."""
    events, memory = interp_launch(job.program, job.grid, job.block, list(job.memory))
    return expected_trace(events), memory


def verify(jobs, runs, refs) -> int:
    """Launches whose trace or memory differ from the interpreter's (or that failed)."""
    bad = 0
    for run, (trace, memory) in zip(runs, refs, strict=True):
        if isinstance(run, QgpuError) or run.trace != trace:
            bad += 1
        elif memory is not None:
            try:
                check_memory(memory, run.memory)
            except QgpuError:
                bad += 1
    return bad


def timed(fn):
    before, cpu, wall = load(), time.process_time(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu, before, load()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--in-flight", type=int, nargs="+", default=[1, 8, 64])
    ap.add_argument("--launches", type=int, default=64,
                    help="the suite's shortest launches used (cycled as needed)")
    ap.add_argument("--jobs", type=int, choices=(1, 2), default=1)
    ap.add_argument("--per-token", action="store_true")
    ap.add_argument("--suite", action="store_true")
    ap.add_argument("--phases", action="store_true")
    ap.add_argument("--batched-from", type=int, default=None, metavar="N",
                    help="step N or more launches in flight with the batched kernel "
                         "(FastEngine.multi_from; 0: never, stepping them one by one)")
    args = ap.parse_args()

    machine = load_machine(progress=False)
    if args.batched_from is not None:
        machine.engine.multi_from = args.batched_from or None
    print(f"batched step from {machine.engine.multi_from} in flight", flush=True)
    c = machine.engine.config
    print(f"machine: {c.num_hidden_layers} layers, hidden {c.hidden_size}; {load()}",
          flush=True)
    everything = suite_launches()
    lengths = {name: len(job.program.blocks) for name, job in everything}
    # the launches of the fewest program blocks (interpreting every launch
    # to sort them by trace takes minutes)
    by_length = sorted(everything, key=lambda item: lengths[item[0]])
    sample = by_length[:args.launches]
    wanted = everything if args.suite else sample
    refs = {name: reference(job) for name, job in wanted}
    for k in args.in_flight:
        work = [sample[i % len(sample)] for i in range(max(len(sample), 2 * k))]
        jobs = [job for _, job in work]
        lib, buf = machine.engine.plan.lib, None
        if args.phases and k == max(args.in_flight):
            buf = np.zeros(len(batch_phases(lib)))
            lib.qgpu_set_batch_profile(buf.ctypes.data)
        runs, wall, cpu, before, after = timed(lambda j=jobs, k=k: generate_many(
            machine, j, in_flight=k, jobs=args.jobs, show_progress=False))
        if buf is not None:
            lib.qgpu_set_batch_profile(None)
        tokens = sum(len(r.trace) for r in runs if not isinstance(r, QgpuError))
        bad = verify(jobs, runs, [refs[name] for name, _ in work])
        print(f"{k:3d} in flight ({args.jobs} job(s)), {len(jobs)} launches, {tokens:,} "
              f"tokens: {tokens / wall:,.0f} tokens/s wall, {tokens / cpu:,.0f} per CPU "
              f"second, {wall:.1f} s; {bad} differ from the interpreter; {before} -> "
              f"{after}", flush=True)
        if buf is not None:
            order = np.argsort(-buf)
            print("  phases (s): " + ", ".join(f"{batch_phases(lib)[i]} {buf[i]:.2f}"
                                               for i in order), flush=True)
        if args.per_token and k == args.in_flight[0]:
            alone, wall, cpu, before, after = timed(lambda j=jobs: [
                generate_launch(machine, x.program, x.grid, x.block, x.memory) for x in j])
            tokens = sum(len(r.trace) for r in alone)
            print(f"  one at a time (generate_launch): {tokens / wall:,.0f} tokens/s wall, "
                  f"{tokens / cpu:,.0f} per CPU second; {before} -> {after}", flush=True)
    if args.suite:
        jobs = [job for _, job in everything]
        load_before = load_average()
        runs, wall, cpu, before, after = timed(lambda: generate_many(
            machine, jobs, in_flight=max(args.in_flight), jobs=args.jobs))
        tokens = sum(len(r.trace) for r in runs if not isinstance(r, QgpuError))
        bad = verify(jobs, runs, [refs[name] for name, _ in everything])
        print(f"whole suite generated ({len(jobs)} launches, {tokens:,} trace tokens, "
              f"{max(args.in_flight)} in flight, {args.jobs} job(s)): {wall:.1f} s wall, "
              f"{tokens / wall:,.0f} tokens/s, {cpu:.1f} s of CPU; {bad} differ from the "
              f"interpreter; {before} -> {after}", flush=True)
        path = record("batched_generation", [{
            "what": f"the whole suite generated (`runtime.generate_many`: {len(jobs)} launches, "
                    f"{tokens:,} trace tokens), {args.jobs} job(s), "
                    f"{max(args.in_flight)} in flight per job; {bad} differ from the "
                    f"interpreter",
            "figure": f"{wall:.1f} s wall ({tokens / wall:,.0f} tokens/s)",
            "how": f"`benchmarks/bench_batched_generation.py --suite --jobs {args.jobs} "
                   f"--in-flight {max(args.in_flight)}`"}], load_before)
        print(f"recorded {path}", flush=True)


if __name__ == "__main__":
    main()
