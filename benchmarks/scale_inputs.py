"""The measured inputs of docs/scale-design.md: registers live across barriers (what a warp
switch would restore) and tokens per warp of the suite's kernels, on the interpreter.

    .venv/bin/python benchmarks/scale_inputs.py [--kernels vec_add,vec_add_f32,...]
"""

from __future__ import annotations

import argparse
import collections

from qgpu import suite
from qgpu.isa.program import Bar, liveness


def live_at_barriers(specs) -> None:
    """Per kernel with a barrier: the most registers live at the exit of a `bar` block."""
    most = {}
    for spec in specs:
        program = suite.compiled_module(spec.source).get_function(spec.kernel).program
        live = liveness(program)
        at_bars = [len(live[i]) for i, block in enumerate(program.blocks)
                   if isinstance(block.terminator, Bar)]
        if at_bars:
            most[spec.name] = max(at_bars)
    print(f"kernels: {len(specs)}, with a barrier: {len(most)}")
    counts = collections.Counter(most.values())
    print("most registers live across one barrier: "
          + ", ".join(f"{n}: {counts[n]} kernels" for n in sorted(counts)))
    for name, n in sorted(most.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {name}: {n}")


def tokens_per_warp(names: list[str]) -> None:
    """Trace tokens of each launch of the named kernels, per warp of 4 lanes."""
    for name in names:
        spec = suite.load_named(name)
        for index, launch in enumerate(spec.launches):
            row = suite.case_row(spec, index)
            grid, block = launch["grid"], launch["block"]
            warps = _count(grid) * -(-_count(block) // 4)
            print(f"{name} grid {grid} block {block}: {row['tokens']} tokens, "
                  f"{row['tokens'] / warps:.0f} per warp ({'ok' if row['ok'] else 'FAILED'})")


def _count(shape) -> int:
    if isinstance(shape, int):
        return shape
    n = 1
    for d in shape:
        n *= d
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernels", default="vec_add,vec_add_f32,saxpy_int,reduce_sum_shared")
    args = ap.parse_args()
    specs = suite.load_suite()
    live_at_barriers(specs)
    tokens_per_warp([n for n in args.kernels.split(",") if n])


if __name__ == "__main__":
    main()
