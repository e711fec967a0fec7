"""Memory through records (docs/scale-design.md, 3.2; `qgpu.examples.record_memory`) at
the Qwen3.5-2B layer shape: layers, hidden size, heads and nonzero weights of a memory of
N words, and a random stream of stores and loads generated on the fast engine with every
answer checked against the oracle.

    .venv/bin/python benchmarks/bench_record_memory.py [--words 4096,16384] [--records 3000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.record_memory import build_record_memory, expected_answers, load, store
from qgpu.model.fast import FastEngine
from qgpu.model.sparse_tensor import SparseTensor


def stream(v, words: int, records: int, seed: int) -> list[int]:
    """Random stores and loads (half each) over every word; loads carry their right
    answers, so the stream is what greedy generation must write."""
    rng = np.random.default_rng(seed)
    tokens: list[int] = []
    for _ in range(records):
        address = int(rng.integers(0, words))
        if rng.random() < 0.5:
            tokens += store(v, address, int(rng.integers(0, 2 ** 32)))
        else:
            tokens += load(v, address, 0)[:1]
            tokens += expected_answers(v, tokens)[-1:]
            tokens += expected_answers(v, tokens)[-1:]
    return tokens


def nonzeros(weights) -> int:
    return sum(t.nnz if isinstance(t, SparseTensor) else int(np.count_nonzero(t))
               for t in weights.tensors.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--words", default="4096,16384")
    ap.add_argument("--records", type=int, default=3000)
    args = ap.parse_args()
    shape = LayerShape.qwen35_2b()
    print(f"load average {os.getloadavg()[0]:.1f}; shape: 16 heads of 128x128, MLP 6144")
    for words in (int(w) for w in args.words.split(",")):
        circuit, vocab = build_record_memory(words, shape)
        start = time.perf_counter()
        compiled = compile_circuit(circuit, shape, cache=False)
        seconds = time.perf_counter() - start
        plan = compiled.plan
        heads = sum(plan.heads_used)
        print(f"{words} words ({words * 4 // 1024} KB): {plan.n_layers} layers, hidden "
              f"{compiled.weights.config.hidden_size}, {heads} heads "
              f"(per layer {plan.heads_used}), {nonzeros(compiled.weights):,} nonzero "
              f"weights, compiled in {seconds:.1f} s")
        tokens = stream(vocab, words, args.records, seed=words)
        engine = FastEngine(compiled.weights)
        start = time.perf_counter()
        answers = engine.forced_greedy(engine.new_state(), tokens)
        seconds = time.perf_counter() - start
        wrong = sum(a != b for a, b in zip(answers, expected_answers(vocab, tokens),
                                           strict=True))
        print(f"  {len(tokens):,} tokens ({args.records} records) in {seconds:.2f} s "
              f"({len(tokens) / seconds:,.0f} tokens/s, fast engine, forced): "
              f"{wrong} wrong answers")


if __name__ == "__main__":
    main()
