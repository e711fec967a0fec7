"""Float kernels on the compiled model (float32 as integer routines, cuda.softfloat):
every launch of the suite's float kernels (those whose PTX has `.f32` instructions) with
engine="model-check" (every token compared with the interpreter's), the outputs against
the kernel's numpy float32 oracle bit for bit. Prints per launch: wall seconds, trace
tokens, blocks executed, the program's ROM blocks and peak register pressure, and the
float routine calls; then the load average (the machine is shared: figures taken under
load say so).

    python benchmarks/bench_float_model.py [--names saxpy_f32 dot_f32] [--engine model]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import qgpu.runtime  # noqa: E402,F401  (registers the model's engines)
from qgpu import suite  # noqa: E402
from qgpu.cuda.shape import launch_shape  # noqa: E402
from qgpu.runtime.compiled import load_machine  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--names", nargs="*", help="suite kernels (default: every float one)")
    ap.add_argument("--engine", default="model-check")
    args = ap.parse_args()
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
