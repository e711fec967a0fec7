"""Memory and time of the weight pipeline: build (or compile) a model, build the fast
engine on it, write its checkpoint; each model in a fresh process so that its peak
resident memory (ru_maxrss) is its own.

Models:
- "bench": benchmarks/bench_model.py, 36 GDN layers at Qwen3.5-2B layer shapes, hidden
  1024, vocabulary 75,776 (1.2B weights);
- "demo": the adder demo circuit compiled (no cache) at LayerShape.qwen35_2b().

    .venv/bin/python benchmarks/bench_sparse.py [--models bench demo] [--no-checkpoint]

Prints, per model and phase, the seconds it took and the peak RSS so far, and checks the
fast engine's tokens against the model's oracle.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build(model: str):
    """(weights, tokens, expected answers) of a model."""
    if model == "bench":
        from bench_model import answers, build_bench_model

        weights = build_bench_model(36)
        tokens = [3, 70_000, 12_345, 65_535, 9, 40_000]
        return weights, tokens, answers(weights, tokens)
    from qgpu.circuit.compile import compile_circuit
    from qgpu.circuit.schedule import LayerShape
    from qgpu.examples.demos import DEMOS

    demo = DEMOS["adder"]()
    compiled = compile_circuit(demo.circuit, LayerShape.qwen35_2b(), cache=False)
    tokens = demo.stream(40, seed=0)
    return compiled.weights, tokens, demo.answers(tokens)


def run_one(model: str, checkpoint: bool) -> dict:
    from qgpu.model.checkpoint import save_checkpoint
    from qgpu.model.fast import FastEngine

    out: dict = {"model": model}
    start = time.perf_counter()
    weights, tokens, want = build(model)
    out["build_s"], out["build_peak_mb"] = time.perf_counter() - start, peak_mb()
    start = time.perf_counter()
    engine = FastEngine(weights)
    out["engine_s"], out["engine_peak_mb"] = time.perf_counter() - start, peak_mb()
    out["backend"] = engine.backend
    state = engine.new_state()
    got = [engine.step_greedy(state, t) for t in tokens]
    out["tokens_ok"] = got == list(want)
    if checkpoint:
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            save_checkpoint(weights, tmp)
            out["checkpoint_s"] = time.perf_counter() - start
            out["checkpoint_mb"] = sum(p.stat().st_size for p in Path(tmp).iterdir()) / 2**20
        out["checkpoint_peak_mb"] = peak_mb()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["bench", "demo"])
    ap.add_argument("--no-checkpoint", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, not args.no_checkpoint)))
        return 0
    ok = True
    for model in args.models:
        cmd = [sys.executable, __file__, "--child", model]
        cmd += ["--no-checkpoint"] if args.no_checkpoint else []
        result = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(result.stdout.strip().splitlines()[-1])
        ok &= row["tokens_ok"]
        print(json.dumps(row))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
