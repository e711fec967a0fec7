"""Wall time of `qgpu demo` after set-up (the compiled machine in the cache): the CLI run as
a user runs it, in a fresh process each time, --repeats times; records
benchmarks/results/demo.json.

    .venv/bin/python benchmarks/bench_demo.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results import load_average, record  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    load_before = load_average()
    walls = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "qgpu.cli", "demo"], capture_output=True,
                              text=True, check=True)
        walls.append(time.perf_counter() - start)
        if "32" not in done.stdout:
            raise SystemExit(f"the demo did not print its result 32:\n{done.stdout}")
    print(f"qgpu demo: {', '.join(f'{w:.2f}' for w in walls)} s wall")
    path = record("demo", [{"what": "`qgpu demo` after set-up (machine in the cache), a fresh "
                            "process each run",
                            "figure": f"{min(walls):.2f}-{max(walls):.2f} s wall",
                            "how": f"`benchmarks/bench_demo.py --repeats {args.repeats}`"}],
                  load_before)
    print(f"recorded {path}")


if __name__ == "__main__":
    main()
