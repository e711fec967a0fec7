"""Launches at the sizes tutorials use (issue 33): for each of the suite's tutorial-sized
kernels, its launch shape, warps, blocks executed and wall time on the interpreter, the
outputs against the kernel's numpy oracle, and what the compiled model machine says of it
(today: refused by name, past its sizes; the trace tokens once it runs them).

    .venv/bin/python benchmarks/bench_tutorial_sizes.py [--record] [NAME ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results import load_average, record  # noqa: E402
from qgpu import suite  # noqa: E402
from qgpu.cuda.shape import launch_shape  # noqa: E402
from qgpu.errors import QgpuError  # noqa: E402
from qgpu.isa import limits  # noqa: E402

KERNELS = ("vector_add_tutorial", "reduce_tree_256", "saxpy_grid_stride", "matmul_tiled_16")


def model_verdict(spec, launch) -> str:
    """What the model engine does with the launch: its tokens, or its refusal."""
    import qgpu.runtime  # noqa: F401  (registers the model's engines)
    if not suite.model_sized(spec, launch):
        fn = suite.compiled_module(spec.source).get_function(spec.kernel)
        try:
            fn(launch["grid"], launch["block"], suite.positional_args(spec, launch["args"]),
               engine="model")
        except QgpuError as exc:
            return f"refused: {exc}"
    _, _, tokens = suite.run_case(spec, launch, engine="model-check")
    return f"{tokens:,} tokens, equal to the interpreter's"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", default=list(KERNELS))
    parser.add_argument("--record", action="store_true",
                        help="write benchmarks/results/tutorial_sizes.json")
    args = parser.parse_args()
    load = load_average()
    rows = []
    for name in args.names:
        spec = suite.load_named(name)
        launch = spec.launches[0]
        shape = launch_shape(launch["grid"], launch["block"])
        fn = suite.compiled_module(spec.source).get_function(spec.kernel)
        values = suite.positional_args(spec, launch["args"])
        start = time.perf_counter()
        result = fn(launch["grid"], launch["block"], values)
        seconds = time.perf_counter() - start
        outputs = {p.name: v for p, v in zip(spec.params, values, strict=True) if p.pointer}
        exact = all(suite.same_bits(outputs[k], v) for k, v in spec.oracle(launch).items())
        warps = limits.launch_warps(shape.ctas, shape.threads)
        verdict = model_verdict(spec, launch)
        print(f"{name}: {shape}, {warps} warps, {result.blocks_executed:,} blocks on the "
              f"interpreter in {seconds:.1f} s ({result.blocks_executed / seconds:,.0f} "
              f"blocks/s), {'exact' if exact else 'WRONG'} against numpy; model: {verdict}")
        rows.append({"what": f"{name} {shape} on the interpreter",
                     "figure": f"{result.blocks_executed:,} blocks, {seconds:.1f} s, "
                               f"{'exact' if exact else 'wrong'}",
                     "how": "benchmarks/bench_tutorial_sizes.py, one process"})
    if args.record:
        print(record("tutorial_sizes", rows, load))


if __name__ == "__main__":
    main()
