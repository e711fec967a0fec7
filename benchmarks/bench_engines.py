"""Decode speed of the engines on the same compiled weights: the fast engine (native
kernel: greedy token only, and full logits rows; and its numpy backend), the numpy
reference, and transformers' Qwen3_5ForCausalLM loaded from the exported checkpoint.

Models (--model):
- "stack" (default): benchmarks/bench_model.py, a register machine over --layers GDN
  layers at Qwen3.5-2B layer shapes (16 heads of 128, MLP 6144, conv 4), hidden
  --hidden, vocabulary 65,536 + 10,240; every sum exact.
- "table": the table machine (qgpu.examples.table_machine) with --layers GDN layers.

    .venv/bin/python benchmarks/bench_engines.py [--model stack] [--layers 36]
        [--fast-tokens 3000] [--tokens 6] [--skip-transformers]

Prints the model's shape and nonzeros, build / engine-compile / checkpoint-load times,
tokens/s per engine, and checks that every engine emits the same greedy tokens, equal to
the machine's answers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_model import answers, build_bench_model  # noqa: E402

from qgpu.model.fast import FastEngine  # noqa: E402
from qgpu.model.fast_native import load_kernel  # noqa: E402
from qgpu.model.reference import ReferenceEngine  # noqa: E402


def table_workload(machine, n, seed=0):
    rng = np.random.default_rng(seed)
    table, tokens, want = {}, [], []
    for _ in range(n):
        if rng.random() < 0.5:
            a, v = int(rng.integers(machine.rows)), int(rng.integers(2 ** machine.bits))
            table[a] = v
            tokens.append(machine.write(a, v))
            want.append(machine.val(v))
        else:
            a, c = int(rng.integers(machine.rows)), int(rng.integers(machine.copies))
            tokens.append(machine.read(a, c))
            want.append(machine.val(table[a]) if a in table else machine.none)
    return tokens, want


def timed(label, fn):
    start = time.perf_counter()
    out = fn()
    print(f"  {label}: {time.perf_counter() - start:.2f} s", flush=True)
    return out


def rate(engine_step, state, tokens):
    """tokens/s feeding `tokens` one by one (after one warm-up step) and the greedy outputs."""
    engine_step(state, tokens[0])
    start = time.perf_counter()
    out = [engine_step(state, t) for t in tokens[1:]]
    return (len(tokens) - 1) / (time.perf_counter() - start), out


def time_transformers(directory, tokens):
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    torch.set_grad_enabled(False)
    model = timed("transformers load", lambda: AutoModelForCausalLM.from_pretrained(
        directory, dtype=torch.float32).eval())
    cache = DynamicCache(config=model.config)
    model(torch.tensor([[tokens[0]]]), cache=cache, use_cache=True)
    start = time.perf_counter()
    out = []
    for t in tokens[1:]:
        logits = model(torch.tensor([[t]]), cache=cache, use_cache=True).logits
        out.append(int(logits[0, -1].argmax()))
    return (len(tokens) - 1) / (time.perf_counter() - start), out


def build(args):
    if args.model == "table":
        from qgpu.examples.table_machine import build_table_machine
        machine = build_table_machine(rows=32, bits=8, copies=8, gdn_layers=args.layers,
                                      hidden=args.hidden, heads=16, head_dim=128,
                                      intermediate=6144)
        tokens, want = table_workload(machine, args.fast_tokens + 1)
        return machine.weights, tokens, want[1:]
    weights = build_bench_model(gdn_layers=args.layers, hidden=args.hidden)
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, weights.config.vocab_size, args.fast_tokens + 1).tolist()
    return weights, tokens, answers(weights, tokens)[1:]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("stack", "table"), default="stack")
    parser.add_argument("--layers", type=int, default=36, help="GDN layers")
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--fast-tokens", type=int, default=3000)
    parser.add_argument("--numpy-tokens", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=6,
                        help="decode steps for the reference and transformers")
    parser.add_argument("--skip-transformers", action="store_true")
    args = parser.parse_args(argv)

    print("build:", flush=True)
    weights, tokens, want = timed("model", lambda: build(args))
    c = weights.config
    total = sum(v.size for v in weights.tensors.values())
    layer_nnz = sum(np.count_nonzero(v) for k, v in weights.tensors.items()
                    if k.startswith("model.layers."))
    print(f"model ({args.model}): {c.num_hidden_layers} layers ({args.layers} GDN + 1 zero "
          f"attention), hidden {c.hidden_size}, {c.linear_num_value_heads} heads of "
          f"{c.linear_key_head_dim}x{c.linear_value_head_dim}, MLP {c.intermediate_size}, "
          f"vocab {c.vocab_size:,}; {weights.nonzero_count():,} of {total:,} weights "
          f"nonzero ({100 * weights.nonzero_count() / total:.3f}%), "
          f"{layer_nnz / args.layers:,.0f} per layer", flush=True)
    timed("native kernel: compile (first use) or load, and check against numpy", load_kernel)
    fast = timed("fast engine plan (sparse arrays for the kernel)", lambda: FastEngine(weights))
    results = {}
    results["fast, greedy token"] = rate(fast.step_greedy, fast.new_state(), tokens)
    results["fast, full logits"] = rate(lambda s, t: fast.greedy(fast.step(s, t)),
                                        fast.new_state(), tokens)
    numpy_fast = timed("fast engine (numpy backend)",
                       lambda: FastEngine(weights, backend="numpy"))
    results["fast, numpy backend"] = rate(numpy_fast.step_greedy, numpy_fast.new_state(),
                                          tokens[:args.numpy_tokens + 1])
    del numpy_fast
    short = tokens[:args.tokens + 1]
    ref = ReferenceEngine(weights)
    results["numpy reference"] = rate(ref.step_greedy, ref.new_state(), short)
    if not args.skip_transformers:
        with tempfile.TemporaryDirectory() as tmp:
            from qgpu.model.checkpoint import save_checkpoint
            timed("checkpoint save", lambda: save_checkpoint(weights, tmp))
            results["transformers"] = time_transformers(tmp, short)
    print("decode:")
    ok = True
    base = results["fast, greedy token"][0]
    for name, (speed, out) in results.items():
        same = out == want[:len(out)]
        ok &= same
        print(f"  {name:22s} {speed:10.1f} tokens/s  ({len(out)} steps; "
              f"fast/this {base / speed:8.1f}x; answers {'ok' if same else 'DIFFER'})")
    print(f"all engines emit the machine's answers: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
