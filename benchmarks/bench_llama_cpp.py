"""Suite launches on the machine in llama.cpp (llama-cpp-python) from a GGUF file, checked
against the interpreter: teacher forced in batches (`--mode forced`, llama.cpp's batched
path: every trace position's argmax against the next trace token, and the memory read
from llama.cpp's recurrent state) or generated one token per decode (`--mode generate`,
then runtime.check.check_trace). One JSON line per launch, then a summary.

    python benchmarks/bench_llama_cpp.py --gguf machine.gguf [--launches 10] \\
        [--mode forced|generate] [--cases dot[0:g1b3],...] [--out rows.jsonl]

--gguf is written first when missing (`qgpu export-gguf --out FILE`: the machine
compiled here, ~24 GiB at the 2B layer shape). Launches: the suite's, shortest first.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from qgpu.errors import CheckMismatch  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gguf", required=True, type=Path)
    p.add_argument("--launches", type=int, default=5, help="the N shortest suite launches")
    p.add_argument("--skip", type=int, default=0, help="skip the first K of them")
    p.add_argument("--cases", help="comma-separated case ids instead")
    p.add_argument("--mode", choices=("forced", "generate"), default="forced")
    p.add_argument("--batch", type=int, default=512, help="llama.cpp n_batch (forced)")
    p.add_argument("--out", type=Path, help="append JSON lines here")
    args = p.parse_args()

    from qgpu.runtime.check import check_trace, forced_launch
    from qgpu.runtime.generate import generate_launch
    from qgpu.runtime.gguf_export import machine_gguf
    from qgpu.runtime.llama_cpp import llama_cpp_version, load_gguf_machine
    from qgpu.validate.engines import suite_launches

    if not args.gguf.exists():
        t = time.perf_counter()
        r = machine_gguf(args.gguf, progress=True)
        print(json.dumps({"export": r, "seconds": round(time.perf_counter() - t, 1)}),
              flush=True)
    launches = suite_launches()
    if args.cases:
        wanted = set(args.cases.split(","))
        launches = [c for c in launches if c[0] in wanted]
    else:
        launches = launches[args.skip:args.skip + args.launches]
    t = time.perf_counter()
    machine = load_gguf_machine(args.gguf, n_batch=args.batch)
    load = time.perf_counter() - t
    print(json.dumps({"llama_cpp_python": llama_cpp_version(), "load_seconds": round(load, 1),
                      "mode": args.mode}), flush=True)
    exact, tokens, seconds = 0, 0, 0.0
    for case, program, grid, block, memory in launches:
        row = {"case": case, "mode": args.mode, "exact": True, "mismatch": None}
        start = time.perf_counter()
        try:
            if args.mode == "forced":
                run = forced_launch(machine, program, grid, block, memory)
            else:
                run = generate_launch(machine, program, grid, block, memory)
                check_trace(program, grid, block, memory, run.prompt, run.trace, run.memory)
        except CheckMismatch as exc:
            row.update(exact=False, mismatch=str(exc))
            run = None
        row["seconds"] = round(time.perf_counter() - start, 2)
        if run is not None:
            row.update(prompt=len(run.prompt), tokens=len(run.trace),
                       tokens_per_second=round(len(run.trace) / run.seconds, 3))
            tokens += len(run.trace) + len(run.prompt)
            seconds += run.seconds
        exact += row["exact"]
        line = json.dumps(row)
        print(line, flush=True)
        if args.out:
            with args.out.open("a") as f:
                f.write(line + "\n")
    print(json.dumps({"launches": len(launches), "exact": exact,
                      "positions_per_second": round(tokens / seconds, 3) if seconds else None}))
    return 0 if exact == len(launches) else 1


if __name__ == "__main__":
    sys.exit(main())
