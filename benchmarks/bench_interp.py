"""Interpreter speed: machine instructions and blocks per second on a loop-heavy launch
(4 warps x 4 lanes, each lane summing 0..n-1 in a loop; one block = 5 instructions).

    .venv/bin/python benchmarks/bench_interp.py [--iterations N]
"""

from __future__ import annotations

import argparse
import time

from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace

LOOP = """
block 0:
  tid r1 ; mov r2, 0 ; mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2 ; add r2, r2, 1 ; xor r5, r3, r2
  setlt.u r4, r2, {n} ; or r6, r5, r1
  br r4, 1, 2
block 2:
  shl r5, r1, 2
  st.global [r5], r3
  exit
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=2000)
    args = ap.parse_args()
    prog = assemble(LOOP.format(n=args.iterations))
    t0 = time.perf_counter()
    res = run_launch(prog, grid=1, block=16, budget=10**7)
    dt = time.perf_counter() - t0
    t1 = time.perf_counter()
    trace = expected_trace(res.events)
    dt_trace = time.perf_counter() - t1
    print(f"launch: 4 warps x 4 lanes, {args.iterations} loop iterations per lane")
    print(f"blocks executed: {res.blocks_executed}, warp-instructions: "
          f"{res.instructions_executed}, lane-instructions: {res.instructions_executed * 4}")
    print(f"interpreter: {dt:.3f} s, {res.instructions_executed / dt:,.0f} warp-instructions/s, "
          f"{res.instructions_executed * 4 / dt:,.0f} lane-instructions/s, "
          f"{res.blocks_executed / dt:,.0f} blocks/s")
    print(f"trace oracle: {len(trace)} tokens in {dt_trace:.3f} s")


if __name__ == "__main__":
    main()
