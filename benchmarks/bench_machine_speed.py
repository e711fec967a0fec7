"""Decode speed of the fast engine on the compiled machine (`load_machine()`), on a
reference launch: a loop of loads, adds, xors and stores (--iterations) on one warp.

Prints the machine's layers, hidden size and nonzeros, the launch's prompt and trace
tokens, tokens/s of the fast engine's native backend (wall and per CPU second: the
machine is shared, the load average is printed with every figure), the native kernel's
time per token split by layer into mixer and MLP (plus the final norm and output head),
the work per token (the kernel's counters: entries of each sparse product, state rows,
head rows) with the bytes it reads and the limit those bytes set at the measured memory
bandwidth, the work and time per token kind (the kind of the token fed: EXEC, V, R,
ADDR, END, ...) with and without reusing layer results whose input repeats (fast_memo.c;
the generation runs are interleaved pairs without and with it), the same tokens through
the same kernel layer by layer (each layer's weights in cache across 128 tokens: what
cache misses cost a generated token), and (with
--numpy-tokens N) the numpy backend on the first N tokens. Every run's tokens are
checked against the interpreter's trace.

    .venv/bin/python benchmarks/bench_machine_speed.py [--iterations 150] [--repeats 3]
        [--numpy-tokens 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.results import load_average, record  # noqa: E402
from qgpu.interp import run_launch  # noqa: E402
from qgpu.isa.asm import assemble  # noqa: E402
from qgpu.model.fast import FastEngine  # noqa: E402
from qgpu.model.fast_native import COUNTERS  # noqa: E402
from qgpu.protocol import encode_prompt, expected_trace  # noqa: E402
from qgpu.protocol.vocab import kind_of  # noqa: E402
from qgpu.runtime.compiled import load_machine  # noqa: E402
from qgpu.runtime.generate import generate_launch  # noqa: E402

LOOP = """
block 0:
  tid r1
  mov r2, 0
  mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2
  ld.global r5, [r0+4]
  xor r5, r5, r3
  jmp 2
block 2:
  st.global [r0+8], r5
  add r2, r2, 1
  setlt.u r4, r2, {n}
  br r4, 1, 3
block 3:
  mov r6, r3
  exit
"""
MEMORY = [3, 5, 7, 9, 11]


def load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=150)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--numpy-tokens", type=int, default=0)
    args = ap.parse_args()

    start = time.perf_counter()
    machine = load_machine(progress=False)
    engine = machine.engine
    c = engine.config
    print(f"machine: {c.num_hidden_layers} layers, hidden {c.hidden_size}, vocabulary "
          f"{c.vocab_size:,}; loaded in {time.perf_counter() - start:.2f} s "
          f"({'plan store' if machine._compiled is None else 'compiled'}); backend "
          f"{engine.backend}", flush=True)

    program = assemble(LOOP.format(n=args.iterations))
    want = expected_trace(run_launch(program, 1, 4, memory=MEMORY).events)
    prompt = encode_prompt(program, 1, 4, MEMORY)
    print(f"launch: loop of {args.iterations} iterations, block 4: {len(prompt)} prompt "
          f"tokens, {len(want)} trace tokens", flush=True)

    min_seconds = np.inf
    native = engine.backend == "native"
    load_before = load_average()
    wall_rates: dict[bool, list[float]] = {False: [], True: []}
    cpu_rates: dict[bool, list[float]] = {False: [], True: []}
    for rep in range(args.repeats):
        for reuse in (False, True) if native else (True,):
            if native:
                set_reuse(engine, reuse)
            before = load()
            cpu = time.process_time()
            run = generate_launch(machine, program, 1, 4, MEMORY, max_tokens=len(want) + 8)
            cpu = time.process_time() - cpu
            assert run.trace == want, "the model's trace differs from the interpreter's"
            if reuse:
                min_seconds = min(min_seconds, run.seconds)
            n = len(prompt) + len(run.trace)
            wall_rates[reuse].append(run.tokens_per_second)
            cpu_rates[reuse].append(len(run.trace) / cpu)
            print(f"native generate_launch #{rep + 1}{REUSE[reuse] if native else ''}: "
                  f"{run.tokens_per_second:,.0f} trace tok/s wall ({n / run.seconds:,.0f} "
                  f"tok/s counting the prompt), {n / cpu:,.0f} tok/s per CPU second; "
                  f"{before} -> {load()}", flush=True)

    record_result(args, c, len(want), wall_rates, cpu_rates, load_before)
    if native:
        for reuse in (False, True):
            by_kind(engine, prompt + want, reuse)
        profile(engine, prompt + want)
        layer_by_layer(engine, prompt + want)
        limit(engine, prompt + want, len(want) / min_seconds)
    if args.numpy_tokens:
        numpy_backend(machine, prompt, want, args.numpy_tokens)


REUSE = {False: " (plain)", True: " (reuse)"}


def record_result(args, config, trace_tokens: int, wall_rates: dict, cpu_rates: dict,
                  load_before: float):
    """benchmarks/results/machine_speed.json: the generation figures README.md shows
    (wall and per CPU second: on the shared machine the load moves the wall figure)."""
    def span(rates):
        return f"{min(rates):,.0f}-{max(rates):,.0f}" if len(rates) > 1 else f"{rates[0]:,.0f}"
    figure = (f"{span(wall_rates[True])} trace tokens/s wall, {span(cpu_rates[True])} per CPU "
              "second")
    if wall_rates[False]:
        figure += (f" (plain path in the same runs: {span(wall_rates[False])} wall, "
                   f"{span(cpu_rates[False])} per CPU second)")
    what = (f"one launch generated on the fast engine (loop launch, {trace_tokens:,} trace "
            f"tokens; default machine: {config.num_hidden_layers} layers, hidden "
            f"{config.hidden_size:,})")
    how = (f"`benchmarks/bench_machine_speed.py --iterations {args.iterations} "
           f"--repeats {args.repeats}`")
    path = record("machine_speed", [{"what": what, "figure": figure, "how": how}], load_before)
    print(f"recorded {path}", flush=True)


def set_reuse(engine: FastEngine, on: bool) -> None:
    """The per-token kernel with (the default) or without the steady conv path and the
    reuse of layer results whose input repeats (the code before them: the plain path)."""
    engine.plan.reuse = on
    engine.plan.lib.qgpu_set_memo(int(on))
KIND_COLUMNS = ("proj", "gate", "units", "down", "conv", "proj_reused", "mlp_reused", "key")


def by_kind(engine: FastEngine, tokens: list[int], reuse: bool) -> None:
    """Work and wall time per token by the kind of the token fed (the kernel's counters,
    one buffer per kind; the wall time of each step, Python's share included), with the
    reuse of layer results on or off."""
    lib = engine.plan.lib
    set_reuse(engine, reuse)
    state = engine.new_state()
    counts: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    before = load()
    try:
        for t in tokens:
            kind = kind_of(t)[0]
            buf = counts.setdefault(kind, np.zeros(len(COUNTERS), np.int64))
            lib.qgpu_set_counts(buf.ctypes.data)
            start = time.perf_counter()
            engine.step_greedy(state, t)
            seconds[kind] = seconds.get(kind, 0.0) + time.perf_counter() - start
    finally:
        lib.qgpu_set_counts(None)
        set_reuse(engine, True)
    total = sum(counts.values())
    counts["all"], seconds["all"] = total, sum(seconds.values())
    print(f"work per token by kind{REUSE[reuse]} ({before} -> {load()}):")
    print(f"  {'kind':>6} {'tokens':>6} {'us':>6} " + " ".join(f"{c:>11}" for c in KIND_COLUMNS))
    for kind in sorted(counts, key=lambda k: -counts[k][COUNTERS.index("tokens")]):
        n = int(counts[kind][COUNTERS.index("tokens")])
        per = dict(zip(COUNTERS, counts[kind] / n, strict=True))
        print(f"  {kind:>6} {n:>6} {seconds[kind] / n * 1e6:>6.0f} "
              + " ".join(f"{per[c]:>11,.0f}" for c in KIND_COLUMNS))


def numpy_backend(machine, prompt, want, n_tokens) -> None:
    tokens = (prompt + want)[:n_tokens + 1]
    numpy_engine = FastEngine(machine.compiled.weights, backend="numpy")
    state = numpy_engine.new_state()
    before = load()
    wall, cpu = time.perf_counter(), time.process_time()
    numpy_engine.consume(state, tokens[:len(prompt) - 1])
    got = [numpy_engine.step_greedy(state, t) for t in tokens[len(prompt) - 1:-1]]
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert got == want[:len(got)], "the numpy backend's tokens differ from the interpreter's"
    print(f"numpy backend, first {len(tokens) - 1} tokens: {(len(tokens) - 1) / wall:,.0f} "
          f"tok/s wall, {(len(tokens) - 1) / cpu:,.0f} per CPU second; {before} -> {load()}")


def layer_by_layer(engine: FastEngine, tokens: list[int], chunk: int = 128) -> None:
    """The same tokens through the same per-token kernel, but every token of a chunk
    through layer i before layer i + 1 (qgpu_forward_forced, teacher forcing): each
    layer's weights stay in cache across the chunk. Against the token-by-token time above,
    what the weights' cache misses cost a generated token. Then the batched kernel
    (qgpu_forward_batch, the check's) on the same chunks."""
    for batched, what in ((False, "per-token kernel"), (True, "batched kernel")):
        state = engine.new_state()
        before = load()
        wall = time.perf_counter()
        for a in range(0, len(tokens), chunk):
            part = np.asarray(tokens[a:a + chunk])
            engine.plan.run_forced(state, part, batched=batched)
            state.position += len(part)
        wall = time.perf_counter() - wall
        print(f"the same tokens layer by layer (chunks of {chunk}, {what}): "
              f"{wall / len(tokens) * 1e6:.0f} us per token ({len(tokens) / wall:,.0f} "
              f"tokens/s); {before} -> {load()}")


def profile(engine: FastEngine, tokens: list[int]) -> None:
    """The native kernel's own clock per layer part over `tokens` (step_greedy each)."""
    n = engine.config.num_hidden_layers
    buf = np.zeros(2 * n + 1)
    lib = engine.plan.lib
    state = engine.new_state()
    before = load()
    lib.qgpu_set_profile(buf.ctypes.data)
    wall = time.perf_counter()
    try:
        for t in tokens:
            engine.step_greedy(state, t)
    finally:
        lib.qgpu_set_profile(None)
    wall = time.perf_counter() - wall
    us = buf / len(tokens) * 1e6
    print(f"per token ({len(tokens)} tokens, {before} -> {load()}): {wall / len(tokens) * 1e6:.0f}"
          f" us wall, of which kernel {us.sum():.0f} us: mixers {us[0:2 * n:2].sum():.0f}, "
          f"MLPs {us[1:2 * n:2].sum():.0f}, final norm + head {us[-1]:.0f}; by layer "
          "(mixer/MLP us):")
    print("  " + "  ".join(f"{i}:{us[2 * i]:.0f}/{us[2 * i + 1]:.0f}" for i in range(n)))


def bandwidth() -> float:
    """Bytes/s one core reads from memory (a 512 MiB float32 array, summed; best of 3)."""
    a = np.ones(128 << 20, np.float32)
    best = np.inf
    for _ in range(3):
        t = time.perf_counter()
        a.sum()
        best = min(best, time.perf_counter() - t)
    return a.nbytes / best


def limit(engine: FastEngine, tokens: list[int], reached: float) -> None:
    """Work per token from the kernel's counters, the bytes it reads (a sparse entry is a
    4-byte value and a 4-byte index; a state row dv floats; a conv channel its window and
    weights; an MLP unit visited 16 bytes of unit tables; every gate form 12 (its value,
    its on end's bias, the list of forms kept); every layer reads h and two norm weight
    vectors; a key float of a looked-up layer part 8: h's and the stored key's), and the
    time those bytes take at the measured bandwidth."""
    counts = np.zeros(len(COUNTERS), np.int64)
    lib, c = engine.plan.lib, engine.config
    state = engine.new_state()
    lib.qgpu_set_counts(counts.ctypes.data)
    try:
        for t in tokens:
            engine.step_greedy(state, t)
    finally:
        lib.qgpu_set_counts(None)
    per = dict(zip(COUNTERS, counts / max(counts[COUNTERS.index("tokens")], 1), strict=True))
    fields = engine.plan.fields
    head_nnz = fields["head.val"].size / max(fields["head.n_rows"], 1)
    forms = sum(int(fields.get(f"layers.{i}.n_forms", 0)) for i in range(c.num_hidden_layers))
    nbytes = (8 * (per["gate"] + per["proj"] + per["down"] + per["up"] + per["out"])
              + 8 * per["gate_cols"] + 16 * per["units"] + 8 * per["acts"] + 12 * forms
              + 4 * c.linear_value_head_dim * per["state_rows"] * 2 + 32 * per["conv"]
              + 8 * head_nnz * per["head_rows"] + 3 * 4 * c.hidden_size * c.num_hidden_layers
              + 8 * per["key"])
    bw = bandwidth()
    print("work per token: " + ", ".join(f"{k} {v:,.0f}" for k, v in per.items()
                                         if k != "tokens"))
    print(f"bytes read per token ~{nbytes / 1e6:.2f} MB; memory bandwidth (one core, "
          f"{load()}) {bw / 1e9:.1f} GB/s: limit {bw / nbytes:,.0f} tokens/s if every byte "
          f"came from memory; reached {reached:,.0f} trace tokens/s "
          f"({reached * nbytes / bw:.2f} of it)")


if __name__ == "__main__":
    main()
