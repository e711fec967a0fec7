"""The "no drift" figure (docs/design.md section 3): over every suite launch the model machine
accepts, and the 12,577-token launch of tests/runtime/test_long_run.py, the smallest
threshold margin against the largest deviation of any threshold input from its ideal
value (analysis.margins: prompt + expected trace teacher-forced through the numpy fast
engine, every threshold, live signal, norm and logit observed).

    python benchmarks/margins_model.py [--no-suite] [--no-long] [--per-kernel]
                                       [--max-positions N] [--jobs N] [NAME ...]

One line per launch (refused launches with the reason), then the totals. --jobs N
measures N launches at a time in forked worker processes (they share the compiled
machine and the numpy engine, built before the fork; each ~1 GiB more of its own).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import sys
import time
from pathlib import Path

from qgpu.analysis.margins import MarginReport
from qgpu.analysis.suite_margins import (
    launch_margins,
    load_margin_machine,
    numpy_engine,
    suite_cases,
)
from qgpu.isa.asm import assemble
from qgpu.progress import progress_callback


def line(case: str, report: MarginReport, seconds: float) -> str:
    dev = report.max_deviation
    ratio = "inf" if math.isinf(report.ratio) else f"{report.ratio:.3g}"
    where = f" at {dev.what} (layer {dev.layer})" if dev.value else ""
    sig = report.max_signal_deviation
    sig_where = f" {sig.what} (layer {sig.layer})" if sig.value else ""
    ok = "exact" if report.exact else "NOT EXACT"
    return (f"{case:44s} {report.positions:6d} pos  margin {report.min_margin.value:.4f}  "
            f"dev {dev.value:.3g}{where}  ratio {ratio}  signal dev {sig.value:.3g}"
            f"{sig_where}  wrong {report.wrong}/{report.forced}  norms bad "
            f"{report.norm_failures}  {ok}  {seconds:.0f}s")


def _measure(machine, item, **kwargs):
    """(case, report or reason, seconds) of one of suite_cases' items."""
    case, launch = item
    if isinstance(launch, str):
        return case, launch, 0.0
    t = time.perf_counter()
    return case, launch_margins(machine, *launch, **kwargs), time.perf_counter() - t


_machine = None  # the margin machine the forked workers inherit


def _measure_inherited(item):
    return _measure(_machine, item)


def _suite_in_parallel(machine, args):
    """(case, report or reason, seconds) of the suite's cases, args.jobs at a time, in
    suite order."""
    global _machine
    _machine = machine
    numpy_engine(machine)  # built once, before the fork
    cases = list(suite_cases(machine, args.names, args.per_kernel, args.max_positions))
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        yield from pool.imap(_measure_inherited, cases)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="suite kernels (default: all)")
    parser.add_argument("--no-suite", action="store_true")
    parser.add_argument("--no-long", action="store_true")
    parser.add_argument("--per-kernel", action="store_true",
                        help="one launch per kernel: its shortest multi-warp launch")
    parser.add_argument("--max-positions", type=int, default=None,
                        help="only launches of at most N positions (prompt + trace)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="suite launches measured at a time (forked processes)")
    args = parser.parse_args()
    start = time.perf_counter()
    machine = load_margin_machine(progress=False)
    plan = machine.compiled.plan
    print(f"machine: {plan.n_layers} layers, hidden {plan.hidden}, "
          f"{len(machine.compiled.thresholds)} thresholds; loaded in "
          f"{time.perf_counter() - start:.0f}s (load average {os.getloadavg()[0]:.1f})",
          flush=True)
    total, measured, refused = MarginReport(), 0, 0
    if not args.no_suite:
        if args.jobs > 1:
            results = _suite_in_parallel(machine, args)
        else:
            progress = progress_callback("margins", "pos")
            results = (_measure(machine, item, progress=progress) for item in
                       suite_cases(machine, args.names, args.per_kernel, args.max_positions))
        for case, result, seconds in results:
            if isinstance(result, str):
                refused += 1
                print(f"{case:44s} refused: {result[:100]}", flush=True)
            else:
                measured += 1
                total = total.merge(result)
                print(line(case, result, seconds), flush=True)
        print(f"suite: {measured} launches measured, {refused} refused by check_launch",
              flush=True)
        print(f"suite overall:\n{total}", flush=True)
    if not args.no_long:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout: tests/
        from tests.runtime.test_long_run import LONG_LOOP

        t = time.perf_counter()
        memory = [0x9E3779B9, 7, 0xFFFFFFFF, 0x80000000]
        long = launch_margins(machine, assemble(LONG_LOOP), 1, 4, memory,
                              progress=progress_callback("margins (long run)", "pos"))
        print(line("long run (test_long_run)", long, time.perf_counter() - t), flush=True)
        print(f"long run:\n{long}", flush=True)
        total = total.merge(long)
    print(f"overall:\n{total}")
    print(f"total {time.perf_counter() - start:.0f}s (load average {os.getloadavg()[0]:.1f})")
    return 0 if total.exact else 1


if __name__ == "__main__":
    raise SystemExit(main())
