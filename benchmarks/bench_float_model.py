"""Float kernels on the compiled model (float32 as integer routines, cuda.softfloat):
every launch of the suite's float kernels (those whose PTX has `.f32` instructions) with
engine="model-check" (every token compared with the interpreter's), the outputs against
the kernel's numpy float32 oracle bit for bit. Prints per launch: wall seconds, trace
tokens, blocks executed, the program's ROM blocks and peak register pressure, and the
float routine calls; then the load average (the machine is shared: figures taken under
load say so).

    python benchmarks/bench_float_model.py [--names saxpy_f32 dot_f32] [--engine model]
    python benchmarks/bench_float_model.py --costs

--costs: what one float operation costs, from one-warp launches on the interpreter (its
tokens are the ones the model writes): ROM blocks, blocks executed and trace tokens of
`o[i] = f(x[i], y[i])` minus those of the same kernel with an integer xor, per kind.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qgpu  # noqa: E402
import qgpu.runtime  # noqa: E402,F401  (registers the model's engines)
from qgpu import suite  # noqa: E402
from qgpu.cuda.shape import launch_shape  # noqa: E402
from qgpu.runtime.compiled import load_machine  # noqa: E402

COST_KINDS = {"xor (integer)": "__float_as_uint(a) ^ __float_as_uint(b)",
              "add": "__float_as_uint(a + b)", "mul": "__float_as_uint(a * b)",
              "fma": "__float_as_uint(fmaf(a, b, 1.5f))", "lt": "a < b",
              "min": "__float_as_uint(fminf(a, b))", "int to float": "__float_as_uint((float)"
              "__float_as_int(a))", "float to int": "(int)a",
              "div": "__float_as_uint(a / b)", "floorf": "__float_as_uint(floorf(a))",
              "two adds (a routine)": "__float_as_uint((a + b) + (a + 3.0f))"}


def costs() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    base = None
    for kind, expr in COST_KINDS.items():
        src = ("__global__ void k(unsigned *o, const float *x, const float *y) {\n"
               f"  int i = threadIdx.x; float a = x[i], b = y[i]; o[i] = {expr}; }}\n")
        kernel = qgpu.compile(src, engine="interp").get_function("k")
        res = kernel(1, 4, (np.zeros(4, np.uint32), x, y))
        row = (len(kernel.program.blocks), res.blocks_executed, res.tokens)
        base = base or row
        print(f"{kind:22s} ROM {row[0]:3d} (+{row[0] - base[0]:3d})  executed {row[1]:3d} "
              f"(+{row[1] - base[1]:3d})  tokens {row[2]:5d} (+{row[2] - base[2]:5d})  "
              f"pressure {kernel.template.pressure}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", nargs="*", help="suite kernels (default: every float one)")
    ap.add_argument("--engine", default="model-check")
    ap.add_argument("--costs", action="store_true", help="per-operation costs (interpreter)")
    args = ap.parse_args()
    if args.costs:
        costs()
        return
    t = time.perf_counter()
    load_machine(progress=False)
    print(f"machine loaded in {time.perf_counter() - t:.1f} s")
    total_tokens = total_s = 0.0
    for spec in suite.load_suite():
        module = suite.compiled_module(spec.source)
        if (args.names and spec.name not in args.names) or ".f32" not in module.ptx:
            continue
        kernel = module.get_function(spec.kernel)
        for index, launch in enumerate(spec.launches):
            template = kernel.template_for(launch_shape(launch["grid"], launch["block"]))
            t = time.perf_counter()
            outputs, expected, tokens = suite.run_case(spec, launch, engine=args.engine)
            wall = time.perf_counter() - t
            ok = all(np.array_equal(np.asarray(outputs[k]).view(np.uint32),
                                    np.asarray(v).view(np.uint32)) for k, v in expected.items())
            total_tokens += tokens or 0
            total_s += wall
            print(f"{spec.case_id(index):44s} {'ok' if ok else 'MISMATCH':8s} {wall:7.1f} s "
                  f"{tokens:7d} tokens  ROM {len(template.program.blocks):3d} blocks  "
                  f"pressure {template.pressure:2d}  calls {template.stats['float_calls']}")
    print(f"total {total_tokens:.0f} tokens in {total_s:.1f} s "
          f"({total_tokens / max(total_s, 1e-9):.0f} tokens/s); load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
