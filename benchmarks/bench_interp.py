"""Interpreter speed: machine instructions and blocks per second on a loop-heavy launch
(4 warps x 4 lanes, each lane summing 0..n-1 in a loop; one block = 4 instructions, one per stage).

    .venv/bin/python benchmarks/bench_interp.py [--iterations N]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results import load_average, record  # noqa: E402
from qgpu.interp import run_launch  # noqa: E402
from qgpu.isa.asm import assemble  # noqa: E402
from qgpu.protocol import expected_trace  # noqa: E402

LOOP = """
block 0:
  tid r1
  mov r2, 0
  mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2
  add r2, r2, 1
  xor r5, r3, r2
  setlt.u r4, r2, {n}
  br r4, 1, 2
block 2:
  shl r5, r1, 2
  st.global [r5], r3
  exit
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    prog = assemble(LOOP.format(n=args.iterations))
    load_before = load_average()
    rates = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        res = run_launch(prog, grid=1, block=16, budget=10**7)
        dt = time.perf_counter() - t0
        rates.append(res.instructions_executed / dt)
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
    figure = f"{min(rates):,.0f}-{max(rates):,.0f} warp-instructions/s ({args.repeats} runs)"
    path = record("interp", [{
        "what": f"interpreter, 4 warps, {args.iterations:,}-iteration loop",
        "figure": figure,
        "how": f"`benchmarks/bench_interp.py --iterations {args.iterations} "
               f"--repeats {args.repeats}`"}], load_before)
    print(f"recorded {path}")


if __name__ == "__main__":
    main()
