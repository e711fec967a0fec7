"""The "no drift" figure (docs/design.md section 3): over every suite launch the model machine
accepts, and the 12,577-token launch of tests/runtime/test_long_run.py, the smallest
threshold margin against the largest deviation of any threshold input from its ideal
value (analysis.margins: prompt + expected trace teacher-forced through the numpy fast
engine, every threshold, live signal, norm and logit observed).

    python benchmarks/margins_model.py [--no-suite] [--no-long] [--per-kernel]
                                       [--max-positions N] [NAME ...]
                                       [--ray [ADDRESS] [--ray-workers N]]

One line per launch (refused launches with the reason), then the totals. --ray measures
the launches (the long run among them) on Ray (qgpu.campaign: a local Ray of
--ray-workers CPUs, or the cluster at ADDRESS), one launch a task, each worker process
compiling the margin machine once (~25 s and ~1 GiB each, from the disk cache): the same
reports, printed in the same order.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from qgpu.analysis.margins import MarginReport
from qgpu.analysis.suite_margins import load_margin_machine, measure, pool_margins, suite_cases
from qgpu.campaign import add_arguments, open_pool
from qgpu.isa.asm import assemble
from qgpu.progress import progress_callback
from qgpu.runtime.compiled import DEFAULT_SPEC


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="suite kernels (default: all)")
    parser.add_argument("--no-suite", action="store_true")
    parser.add_argument("--no-long", action="store_true")
    parser.add_argument("--per-kernel", action="store_true",
                        help="one launch per kernel: its shortest multi-warp launch")
    parser.add_argument("--max-positions", type=int, default=None,
                        help="only launches of at most N positions (prompt + trace)")
    add_arguments(parser)
    args = parser.parse_args()
    start = time.perf_counter()
    pool = open_pool(args.ray, args.ray_workers)
    with pool:
        if args.ray is None:
            machine = load_margin_machine(progress=False)
            plan = machine.compiled.plan
            print(f"machine: {plan.n_layers} layers, hidden {plan.hidden}, "
                  f"{len(machine.compiled.thresholds)} thresholds; loaded in "
                  f"{time.perf_counter() - start:.0f}s (load average {load():.1f})", flush=True)
        else:   # the workers compile the machine; here its spec chooses the launches
            machine = SimpleNamespace(spec=DEFAULT_SPEC)
            print(f"Ray: {pool.workers} CPUs, ready in {time.perf_counter() - start:.0f}s",
                  flush=True)
        items = [] if args.no_suite else list(
            suite_cases(machine, args.names, args.per_kernel, args.max_positions))
        if not args.no_long:
            items.append((LONG, long_launch()))
        if args.ray is None:
            results = (measure(machine, item, progress=progress_callback(
                f"margins ({item[0]})", "pos")) for item in items)
        else:
            results = pool_margins(pool, items)
        suite_total, total, measured, refused = MarginReport(), MarginReport(), 0, 0
        for case, result, seconds in results:
            if isinstance(result, str):
                refused += 1
                print(f"{case:44s} refused: {result[:100]}", flush=True)
                continue
            print(line(case, result, seconds), flush=True)
            total = total.merge(result)
            if case == LONG:
                print(f"long run:\n{result}", flush=True)
            else:
                measured += 1
                suite_total = suite_total.merge(result)
    if not args.no_suite:
        print(f"suite: {measured} launches measured, {refused} refused by check_launch")
        print(f"suite overall:\n{suite_total}")
    print(f"overall:\n{total}")
    print(f"total {time.perf_counter() - start:.0f}s (load average {load():.1f})")
    return 0 if total.exact else 1


LONG = "long run (test_long_run)"


def long_launch() -> tuple:
    """tests/runtime/test_long_run.py's 12,577-token launch: (program, grid, block, memory)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout: tests/
    from tests.runtime.test_long_run import LONG_LOOP

    return assemble(LONG_LOOP), 1, 4, [0x9E3779B9, 7, 0xFFFFFFFF, 0x80000000]


def load() -> float:
    return os.getloadavg()[0]


if __name__ == "__main__":
    raise SystemExit(main())
