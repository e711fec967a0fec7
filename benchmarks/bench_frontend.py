"""bench_frontend: the CUDA front end over the kernel suite for several machine shapes.

For each (SLOTS, STAGES) the machine constants are patched, every suite kernel is compiled
and each of its launches run on the interpreter against its oracle. Printed per shape:
kernels passing (all launches equal to the oracle), kernels over the ROM (a clean
CompileError naming the ROM limit), other failures, the machine blocks of all programs,
the trace tokens of all passing launches, and the demo dot product's tokens
([1, 2, 3] . [4, 5, 6], the first launch of kernels/dot).

    .venv/bin/python benchmarks/bench_frontend.py                 # SLOTS 1,2,4 x STAGES 2,4
    .venv/bin/python benchmarks/bench_frontend.py --slots 1 2 3 4 --stages 2 3 4 -v
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qgpu import suite
from qgpu.errors import CompileError, QgpuError
from qgpu.isa import limits


def run_shape(specs, slots: int, stages: int, verbose: bool = False) -> dict:
    """The suite at one machine shape; the constants are restored afterwards."""
    saved = limits.SLOTS, limits.STAGES
    limits.SLOTS, limits.STAGES = slots, stages
    suite._compiled.clear()
    row = {"slots": slots, "stages": stages, "passing": 0, "rom": [], "failed": [],
           "blocks": 0, "tokens": 0, "dot": None, "seconds": 0.0}
    start = time.perf_counter()
    try:
        for spec in specs:
            try:
                kernel = suite.compiled_module(spec.source).get_function(spec.kernel)
                tokens = []
                for launch in spec.launches:
                    outputs, expected, n = suite.run_case(spec, launch)
                    if not all(np.array_equal(outputs[k], v) for k, v in expected.items()):
                        raise AssertionError(f"launch {len(tokens)} differs from the oracle")
                    tokens.append(n)
            except CompileError as exc:
                rom = "program ROM holds" in str(exc)
                row["rom" if rom else "failed"].append(spec.name)
                if verbose:
                    print(f"  {spec.name}: {exc}")
                continue
            except (QgpuError, AssertionError) as exc:
                row["failed"].append(spec.name)
                if verbose:
                    print(f"  {spec.name}: {type(exc).__name__}: {exc}")
                continue
            row["passing"] += 1
            row["blocks"] += len(kernel.program.blocks)
            row["tokens"] += sum(tokens)
            if spec.name == "dot":
                row["dot"] = tokens[0]
    finally:
        limits.SLOTS, limits.STAGES = saved
        suite._compiled.clear()
    row["seconds"] = time.perf_counter() - start
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print each failing kernel's error")
    args = parser.parse_args(argv)
    specs = suite.load_suite()
    print(f"{len(specs)} suite kernels, "
          f"{sum(len(s.launches) for s in specs)} launches, interpreter")
    print(f"{'SLOTS':>5} {'STAGES':>6} {'passing':>8} {'ROM':>4} {'failed':>6} "
          f"{'blocks':>7} {'tokens':>9} {'dot':>5} {'time':>7}")
    bad = 0
    for slots in args.slots:
        for stages in args.stages:
            r = run_shape(specs, slots, stages, args.verbose)
            bad += len(r["failed"])
            print(f"{slots:5d} {stages:6d} {r['passing']:8d} {len(r['rom']):4d} "
                  f"{len(r['failed']):6d} {r['blocks']:7d} {r['tokens']:9,d} "
                  f"{r['dot'] if r['dot'] is not None else '-':>5} "
                  f"{r['seconds']:6.1f}s", flush=True)
            for what in ("rom", "failed"):
                if r[what]:
                    print(f"{'':13s}{what}: {', '.join(r[what])}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
