"""Long launches on the model (issue 27, point 4): a kernel that runs ~20,000 blocks as
written, on the model with its default budget (no flag), generated and checked token by
token against the interpreter; and a `while (1) {}` kernel, which must end with the
budget error (not a "runaway" guess) in bounded time. Prints blocks, tokens, wall time
and tokens/s of each, and the load average (timings on a shared machine vary with it).

    .venv/bin/python benchmarks/bench_long_launch.py [--iterations 10000] [--skip-spin]
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
import qgpu.runtime  # noqa: E402,F401 - registers the model's engines
from qgpu.errors import MachineError  # noqa: E402
from qgpu.runtime.generate import DEFAULT_MODEL_BUDGET  # noqa: E402

# two machine blocks per iteration (body, loop test): n = 10,000 runs ~20,000 blocks
LOOP = """__global__ void lcg(int *out, int n) {
  int acc = threadIdx.x;
  for (int k = 0; k < n; ++k) acc = acc * 1103515245 + 12345 + k;
  out[threadIdx.x] = acc;
}
"""
SPIN = """__global__ void spin(int *out) {
  out[threadIdx.x] = 1;
  while (1) {}
}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10_000)
    parser.add_argument("--skip-loop", action="store_true")
    parser.add_argument("--skip-spin", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}; model default budget "
          f"{DEFAULT_MODEL_BUDGET} blocks")
    if not args.skip_loop:
        fn = qgpu.compile(LOOP, engine="interp").get_function("lcg")
        ref = np.zeros(4, np.int32)
        interp = fn(1, 4, [ref, args.iterations])
        out = np.zeros(4, np.int32)
        start = time.perf_counter()
        res = fn(1, 4, [out, args.iterations], engine="model-check")
        seconds = time.perf_counter() - start
        assert out.tolist() == ref.tolist() and res.trace == interp.trace
        print(f"loop n={args.iterations}: {res.blocks_executed} blocks, {res.tokens} trace "
              f"tokens, {seconds:.1f} s wall (generation + check), "
              f"{res.tokens / seconds:.0f} tokens/s; equal to the interpreter; "
              f"load {os.getloadavg()[0]:.1f}")
    if not args.skip_spin:
        fn = qgpu.compile(SPIN, engine="interp").get_function("spin")
        start = time.perf_counter()
        try:
            fn(1, 4, [np.zeros(4, np.int32)], engine="model")
        except MachineError as exc:
            seconds = time.perf_counter() - start
            print(f"while (1): MachineError after {seconds:.1f} s wall: {exc}; "
                  f"load {os.getloadavg()[0]:.1f}")
        else:
            print("while (1): the launch ended?!")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
