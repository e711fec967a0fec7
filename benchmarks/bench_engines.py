"""Decode speed of the three engines on the same compiled weights: the fast sparse
engine, the numpy reference, and transformers' Qwen3_5ForCausalLM loaded from the
exported checkpoint. The model is the table machine (qgpu.circuit.table_machine) at
Qwen3.5-2B-like layer shapes: hidden 1024, 16 GDN heads of 128, MLP 6144.

    .venv/bin/python benchmarks/bench_engines.py [--gdn-layers 3] [--tokens 64]

It also checks that the three engines emit the same greedy tokens and that those are
the machine's answers.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from qgpu.circuit.table_machine import build_table_machine  # noqa: E402
from qgpu.model.fast import FastEngine  # noqa: E402
from qgpu.model.reference import ReferenceEngine  # noqa: E402


def workload(machine, n, seed=0):
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


def time_engine(engine, tokens):
    state = engine.new_state()
    engine.step(state, tokens[0])  # warm-up
    start = time.perf_counter()
    out = [engine.greedy(engine.step(state, t)) for t in tokens[1:]]
    return (len(tokens) - 1) / (time.perf_counter() - start), out


def time_transformers(directory, tokens):
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    torch.set_grad_enabled(False)
    model = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    cache = DynamicCache(config=model.config)
    model(torch.tensor([[tokens[0]]]), cache=cache, use_cache=True)
    start = time.perf_counter()
    out = []
    for t in tokens[1:]:
        logits = model(torch.tensor([[t]]), cache=cache, use_cache=True).logits
        out.append(int(logits[0, -1].argmax()))
    return (len(tokens) - 1) / (time.perf_counter() - start), out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gdn-layers", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--fast-tokens", type=int, default=2000)
    parser.add_argument("--hidden", type=int, default=1024)
    args = parser.parse_args(argv)

    machine = build_table_machine(rows=32, bits=8, copies=8, gdn_layers=args.gdn_layers,
                                  hidden=args.hidden, heads=16, head_dim=128,
                                  intermediate=6144)
    c = machine.weights.config
    total = sum(v.size for v in machine.weights.tensors.values())
    print(f"model: {c.num_hidden_layers} layers ({args.gdn_layers} GDN + 1 zero attention), "
          f"hidden {c.hidden_size}, {c.linear_num_value_heads} heads of "
          f"{c.linear_key_head_dim}, MLP {c.intermediate_size}, vocab {c.vocab_size}; "
          f"{machine.weights.nonzero_count():,} of {total:,} weights nonzero")
    tokens, want = workload(machine, max(args.tokens, args.fast_tokens))
    fast_rate, fast_out = time_engine(FastEngine(machine.weights), tokens)
    assert fast_out == want[1:len(tokens)], "fast engine tokens differ from the machine's"
    short = tokens[:args.tokens]
    ref_rate, ref_out = time_engine(ReferenceEngine(machine.weights), short)
    with tempfile.TemporaryDirectory() as tmp:
        from qgpu.model.checkpoint import save_checkpoint
        save_checkpoint(machine.weights, tmp)
        hf_rate, hf_out = time_transformers(tmp, short)
    same = ref_out == hf_out == fast_out[:len(short) - 1]
    print(f"fast engine   {fast_rate:10.1f} tokens/s  ({len(tokens) - 1} decode steps)")
    print(f"numpy ref     {ref_rate:10.1f} tokens/s  ({len(short) - 1} decode steps)")
    print(f"transformers  {hf_rate:10.1f} tokens/s  ({len(short) - 1} decode steps)")
    print(f"speedup fast/transformers {fast_rate / hf_rate:.0f}x; tokens identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
