"""Launch speed on a merged model (issue 13, point 6): the machine merged into a random
base at Qwen3.5-2B's per-layer shapes (16 GDN heads of 128, MLP 6144; a GDN and an
attention layer, hidden 256), in memory (merge_weights), the loop launch of
bench_machine_speed (one warp) generated greedily:
- qgpu's engine as the runtime drives a merged checkpoint (runtime.checkpoint: the
  circuit layers and GPU rows only, `launch_weights`, exact because every base layer adds
  0 to a GPU token; the native kernel);
- qgpu's engine over the whole merged model (every base layer run for every GPU token;
  the numpy backend, since the base has an attention layer): what skipping saves;
- the machine alone (the same circuit layers without the merge's flag columns).
Every run's trace is checked against the interpreter's. transformers' figure needs the
merged checkpoint on disk and all of it resident in float32 (merge.size): see
`qgpu run --engine transformers` and tests/runtime/test_transformers_engine.py.

    .venv/bin/python benchmarks/bench_merged_launch.py [--iterations 60]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_machine_speed import LOOP, MEMORY  # noqa: E402  (benchmarks/ is on the path)

from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.merge import merge_weights
from qgpu.merge.circuits import machine_part
from qgpu.model.config import FULL, LINEAR
from qgpu.model.fast import FastEngine
from qgpu.model.weights import EMBED, QwenWeights
from qgpu.protocol import encode_prompt, expected_trace
from qgpu.runtime.checkpoint import OffsetEngine, machine_from_weights, standalone_info
from qgpu.runtime.generate import generate_launch
from tests.merge.machine_helpers import SHAPE, machine_base_config


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def timed(machine, program, want) -> float:
    start = time.perf_counter()
    run = generate_launch(machine, program, 1, 1, MEMORY, max_tokens=len(want) + 8)
    seconds = time.perf_counter() - start
    assert run.trace == want, "trace differs from the interpreter's"
    return len(run.trace) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    args = parser.parse_args()
    program = assemble(LOOP.format(n=args.iterations))
    want = expected_trace(run_launch(program, 1, 1, memory=MEMORY).events)
    print(f"launch: {len(encode_prompt(program, 1, 1, MEMORY))} prompt + {len(want)} trace "
          f"tokens")
    part = machine_part(SHAPE)
    base = QwenWeights.random(machine_base_config(256, [LINEAR, FULL], True), seed=5)
    base[EMBED] = np.random.default_rng(6).normal(0, 1.0, base[EMBED].shape)
    merged, lay = merge_weights(base, part)
    info = {"circuit": part.name, **lay.describe(), "circuit_info": part.info}
    print(f"merged: hidden {lay.hidden}, {lay.circuit_layers} + 2 layers, {load()}")
    skip = machine_from_weights(merged, info)
    print(f"qgpu engine, circuit layers only ({skip.engine.inner.backend}): "
          f"{timed(skip, program, want):.0f} tokens/s, {load()}")
    whole = machine_from_weights(merged, info)
    whole.engine = OffsetEngine(FastEngine(merged), lay.gpu_token_offset, lay.circuit.vocab_size)
    print(f"qgpu engine, whole merged model ({whole.engine.inner.backend}): "
          f"{timed(whole, program, want):.0f} tokens/s, {load()}")
    del whole, skip, merged
    alone = machine_from_weights(part.weights, standalone_info(part.weights.config, part.info))
    print(f"machine alone: {timed(alone, program, want):.0f} tokens/s, {load()}")


if __name__ == "__main__":
    main()
