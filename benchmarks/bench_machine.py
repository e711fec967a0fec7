"""The compiled machine's figures (issue 5's list): compiled layers, hidden size, heads and
MLP units used, nonzero weights, weight-compile time (cold, no cache) and load time
(cached), tokens of the dot-product launch written by the model, decode speed of the
fast engine (native and numpy backends) and, with --transformers, of unmodified
transformers on the exported float32 checkpoint, and peak memory.

    python benchmarks/bench_machine.py [--cold] [--transformers] [--spec full|dot]

--spec dot compiles only the operations the dot kernel uses (MachineSpec.for_programs);
the transformers figure needs the dense float32 checkpoint in RAM (its size is printed
before it is written).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

import numpy as np

import qgpu
from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.interp import run_launch
from qgpu.model.fast import FastEngine
from qgpu.protocol import encode_prompt, expected_trace
from qgpu.runtime.compiled import ModelMachine
from qgpu.runtime.generate import generate_launch
from qgpu.suite import DEMO_KERNEL, kernel_source


def dense_bytes(config) -> int:
    """float32 bytes of the checkpoint transformers would hold."""
    h, v, ffn = config.hidden_size, config.vocab_size, config.intermediate_size
    hk, hv = config.linear_num_key_heads, config.linear_num_value_heads
    dk, dv = config.linear_key_head_dim, config.linear_value_head_dim
    linear = h * (2 * hk * dk + 2 * hv * dv + 2 * hv) + hv * dv * h + 3 * h * ffn
    full = (h * (2 * config.num_attention_heads * config.head_dim
                 + 2 * config.num_key_value_heads * config.head_dim)
            + config.num_attention_heads * config.head_dim * h + 3 * h * ffn)
    layers = sum(linear if t == "linear_attention" else full for t in config.layer_types)
    return 4 * (layers + 2 * v * h)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cold", action="store_true", help="also time a compile without cache")
    p.add_argument("--transformers", action="store_true",
                   help="export the checkpoint and time transformers (needs its size in RAM)")
    p.add_argument("--spec", choices=("full", "dot"), default="full")
    p.add_argument("--repeat", type=int, default=5, help="dot launches timed per backend")
    args = p.parse_args(argv)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

    kernel = qgpu.compile(kernel_source(DEMO_KERNEL), filename="dot.cu").get_function("dot")
    a, b = np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32)
    program, memory, _, _ = kernel.link(1, 3, (a, b, np.zeros(1, np.int32), 3))
    spec = MachineSpec.for_programs([program]) if args.spec == "dot" else MachineSpec()
    shape = LayerShape.qwen35_2b()
    if args.cold:
        t = time.perf_counter()
        compile_machine(shape, spec, cache=False)
        print(f"weight compile (cold, no cache): {time.perf_counter() - t:.1f} s")
    t = time.perf_counter()
    compiled = compile_machine(shape, spec)
    print(f"weight compile/load (disk cache): {time.perf_counter() - t:.1f} s")
    plan = compiled.plan
    print(f"spec: {args.spec} ({len(spec.op_names)} operations)")
    print(f"layers: {plan.n_layers}  hidden: {plan.hidden}  heads used: "
          f"{sum(plan.heads_used)} of {shape.key_heads * plan.n_layers}  MLP units: "
          f"{sum(plan.units):,} of {shape.mlp * plan.n_layers:,}")
    print(f"nonzero weights: {compiled.weights.nonzero_count():,}  dense float32 "
          f"checkpoint: {dense_bytes(compiled.weights.config) / 2**30:.2f} GiB")

    initial = [int(x) for x in encode_prompt(program, 1, 3, memory)]
    want = expected_trace(run_launch(program, 1, 3, memory=memory).events)
    for backend in ("native", "numpy"):
        try:
            machine = ModelMachine(compiled, spec, FastEngine(compiled.weights, backend))
        except RuntimeError as err:
            print(f"fast engine ({backend}): unavailable ({err})")
            continue
        runs = [generate_launch(machine, program, 1, 3, memory)
                for _ in range(args.repeat if backend == "native" else 1)]
        assert all(r.trace == want for r in runs), "the model's trace differs"
        speed = max(r.tokens_per_second for r in runs)
        print(f"dot launch on the model ({backend}): prompt {len(initial)} tokens, trace "
              f"{len(runs[0].trace)} tokens (seed: 47), {speed:,.0f} trace tokens/s (best of "
              f"{len(runs)})")
    if args.transformers:
        transformers_speed(compiled, initial + want)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak memory (max RSS): {peak:.2f} GiB")
    return 0


def transformers_speed(compiled, tokens: list[int]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    from qgpu.model.checkpoint import save_checkpoint

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        save_checkpoint(compiled.weights, tmp)
        print(f"export: {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(tmp, dtype=torch.float32).eval()
        print(f"transformers load: {time.perf_counter() - t:.1f} s")
    steps = tokens[-16:]
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        model(torch.tensor([tokens[:-16]]), cache=cache, use_cache=True)
        t = time.perf_counter()
        for tok in steps:
            model(torch.tensor([[tok]]), cache=cache, use_cache=True)
        dt = time.perf_counter() - t
    print(f"transformers decode: {len(steps) / dt:.2f} tokens/s")


if __name__ == "__main__":
    sys.exit(main())
