"""The circuit compiler on its demo circuits: compile time (cold and from the cache), the
size of what it builds (layers, hidden, heads, MLP units, nonzero weights), and decode
speed of the compiled model on the fast engine, the numpy reference and transformers
(from the exported checkpoint), with every engine's tokens checked against the oracle.

    .venv/bin/python benchmarks/bench_circuit.py [--shape small|2b] [--tokens 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qgpu.circuit.compile import compile_circuit  # noqa: E402
from qgpu.circuit.schedule import LayerShape  # noqa: E402
from qgpu.examples.demos import DEMOS  # noqa: E402
from qgpu.model.fast import FastEngine  # noqa: E402
from qgpu.model.reference import ReferenceEngine  # noqa: E402


def decode_rate(step, tokens):
    step(tokens[0])  # warm-up
    start = time.perf_counter()
    out = [step(t) for t in tokens[1:]]
    return (len(tokens) - 1) / (time.perf_counter() - start), out


def engine_rate(engine, tokens):
    state = engine.new_state()
    return decode_rate(lambda t: engine.greedy(engine.step(state, t)), tokens)


def transformers_rate(weights, tokens):
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    from qgpu.model.checkpoint import save_checkpoint

    torch.set_grad_enabled(False)
    with tempfile.TemporaryDirectory() as tmp:
        save_checkpoint(weights, tmp)
        model = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.float32).eval()
    cache = DynamicCache(config=model.config)

    def step(t):
        out = model(torch.tensor([[t]]), cache=cache, use_cache=True)
        return int(out.logits[0, -1].argmax())

    return decode_rate(step, tokens)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=["small", "2b"], default="2b")
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--no-transformers", action="store_true")
    args = ap.parse_args()
    shape = LayerShape.small() if args.shape == "small" else LayerShape.qwen35_2b()
    print(f"layer shape: {shape}")
    ok = True
    with tempfile.TemporaryDirectory() as cache:
        for name, build in DEMOS.items():
            demo = build()
            cold = compile_circuit(demo.circuit, shape, cache=cache)
            start = time.perf_counter()
            hit = compile_circuit(build().circuit, shape, cache=cache)
            hit_s = time.perf_counter() - start
            p, w = cold.plan, cold.weights
            tokens = demo.stream(args.tokens, seed=0)
            want = demo.answers(tokens)[1:]
            rates = {}
            labels = ["fast", "reference"] + ([] if args.no_transformers else ["transformers"])
            for label in labels:
                if label == "transformers":
                    rate, got = transformers_rate(w, tokens)
                else:
                    engine = FastEngine(w) if label == "fast" else ReferenceEngine(w)
                    rate, got = engine_rate(engine, tokens)
                rates[label] = rate
                ok &= got == want
                if got != want:
                    print(f"  {name}: {label} tokens differ from the oracle")
            print(f"{name}: {p.n_layers} layers, hidden {p.hidden}, heads/layer "
                  f"{p.heads_used}, MLP units/layer {p.units} (+1 ledger each), "
                  f"{w.nonzero_count()} nonzeros of {sum(t.size for t in w.tensors.values())}; "
                  f"compile {cold.seconds:.3f}s, cache hit {hit_s:.3f}s "
                  f"({'hit' if hit.from_cache else 'MISS'}); decode tokens/s: "
                  + ", ".join(f"{k} {v:.0f}" for k, v in rates.items()))
    print("all tokens equal the oracle" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
