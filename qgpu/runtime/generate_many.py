"""runtime.generate_many: many launches on the compiled model at once. Each launch is what
runtime.generate.generate_launch runs alone (its prompt, its own model state, greedy
tokens fed back until HALT, the same limits and errors). Up to `in_flight` launches per
job are in flight; one engine call (FastEngine.step_greedy_many) writes the next token of
every one: one by one with the per-token kernel, or, from engine.multi_from launches on,
in one call of the batched kernel that reads each layer's weights once for all of them
(model.fast.MULTI_FROM: measured slower on the development machine, so off by default;
the default is one launch in flight per job). A launch that ends leaves and the next
waiting one joins, so launches of different lengths come and go. Tokens, states and
memory are each launch's alone-run's, bit for bit (tests/runtime/test_generate_many.py).

A launch's prompt goes in by teacher forcing (FastEngine.forced_greedy, chunks of
FORCED_CHUNK: the batched kernel over its positions), the same state and first token as
generate_launch's token by token prefill. `jobs=2` runs two such batches in two threads
(the native kernel releases the GIL; each thread has its own scratch), taking launches
from one queue: both cores of a two-core machine.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from qgpu.errors import QgpuError
from qgpu.isa.program import Program
from qgpu.model.state import ModelState
from qgpu.progress import progress
from qgpu.protocol import encode_prompt
from qgpu.runtime.compiled import LaunchMachine
from qgpu.runtime.generate import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL_BUDGET,
    ModelRun,
    TraceWriter,
)

# launches in flight per job: one, stepped by the per-token kernel with its reuse of layer
# results, is the fastest measured (model.fast.MULTI_FROM: the whole suite with two jobs
# in 122 s wall, against 160 s with 64 in flight in turn and 179 s batched)
IN_FLIGHT = 1
FORCED_CHUNK = 128  # prompt tokens per call of the batched kernel (runtime.check's chunk)


@dataclass(frozen=True)
class LaunchJob:
    """One launch to run: a linked program, its launch shape and initial global memory;
    max_tokens: this launch's own trace limit (else generate_many's)."""
    program: Program
    grid: int
    block: int
    memory: Sequence[int] = ()
    max_tokens: int | None = None


@dataclass
class _Flight:
    index: int
    prompt: list[int]
    state: ModelState
    writer: TraceWriter
    token: int  # the next token to feed (the last one the model wrote)
    start: float


def _prefill(engine, state: ModelState, prompt: list[int]) -> int:
    """The prompt into `state`; the model's first trace token (generate_launch's
    consume + step_greedy, by teacher forcing where the engine has it)."""
    forced = getattr(engine, "forced_greedy", None)
    if forced is None:
        engine.consume(state, prompt[:-1])
        return engine.step_greedy(state, prompt[-1])
    out = []
    for a in range(0, len(prompt), FORCED_CHUNK):
        out = forced(state, prompt[a:a + FORCED_CHUNK])
    return out[-1]


def generate_many(machine: LaunchMachine, launches: Sequence[LaunchJob], *,
                  in_flight: int = IN_FLIGHT, jobs: int = 1,
                  max_tokens: int = DEFAULT_MAX_TOKENS,
                  max_blocks: int = DEFAULT_MODEL_BUDGET, keep_states: bool = False,
                  on_result: Callable[[int, ModelRun | QgpuError], None] | None = None,
                  show_progress: bool = True) -> list[ModelRun | QgpuError]:
    """Run every launch on the model, up to `in_flight` at once per job (jobs: 1 or 2
    threads, each its own batch). Returns one entry per launch, in order: its ModelRun,
    or the QgpuError generate_launch would have raised for it (refused by the machine,
    over the block budget or max_tokens, a token outside the protocol); one launch's
    error does not stop the others. A ModelRun's `state` is None unless keep_states (a
    machine's state is ~10 MB: a campaign keeps only the memory read from it); its
    `seconds` run from the launch's prompt to its end, other launches stepping alongside.
    on_result(index, result) is called as each launch ends (from the job's thread)."""
    if in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, not {in_flight}")
    if jobs not in (1, 2):
        raise ValueError(f"jobs must be 1 or 2, not {jobs}")
    results: list[ModelRun | QgpuError | None] = [None] * len(launches)
    queue = deque(range(len(launches)))
    lock = threading.Lock()
    bar = progress(total=len(launches), desc="model launches", unit="launch",
                   enabled=show_progress, delay=1.0)

    def finish(index: int, result) -> None:
        results[index] = result
        with lock:
            bar.update()
        if on_result is not None:
            on_result(index, result)

    def take() -> int | None:
        with lock:
            return queue.popleft() if queue else None

    def job() -> None:
        _run_batch(machine, launches, take, finish, in_flight, max_tokens, max_blocks,
                   keep_states)

    try:
        if jobs == 1:
            job()
        else:
            errors: list[BaseException] = []

            def guarded() -> None:
                try:
                    job()
                except BaseException as err:  # re-raised in the caller's thread
                    errors.append(err)
            threads = [threading.Thread(target=guarded, daemon=True) for _ in range(jobs)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
    finally:
        bar.close()
    return results


def _run_batch(machine, launches, take, finish, in_flight: int, max_tokens: int,
               max_blocks: int, keep_states: bool) -> None:
    """One job: keep up to in_flight launches stepping together until none is left."""
    engine = machine.engine
    flights: list[_Flight] = []

    def join(index: int) -> None:
        launch = launches[index]
        start = time.perf_counter()
        try:
            machine.check(launch.program, launch.grid, launch.block)
            prompt = encode_prompt(launch.program, launch.grid, launch.block,
                                   launch.memory)
            state = engine.new_state()
            limit = launch.max_tokens if launch.max_tokens is not None else max_tokens
            flight = _Flight(index, prompt, state, TraceWriter(limit, max_blocks),
                             _prefill(engine, state, prompt), start)
        except QgpuError as err:
            finish(index, err)
            return
        advance(flight, flight.token)

    def advance(flight: _Flight, token: int) -> None:
        """The model wrote `token` for this launch: keep it in flight or end it."""
        try:
            if token < 0:  # an OffsetEngine's id outside the GPU tokens: its error
                engine._out(-1 - token)
            ended = flight.writer.add(token)
        except QgpuError as err:
            finish(flight.index, err)
            return
        if not ended:
            flight.token = token
            flights.append(flight)
            return
        state = flight.state
        engine.settle([state])  # its conv arrays current (model.fast_multi's lane store)
        finish(flight.index, ModelRun(flight.prompt, flight.writer.trace,
                                      state if keep_states else None,
                                      time.perf_counter() - flight.start,
                                      machine.read_memory(state)))

    while True:
        while len(flights) < in_flight:
            index = take()
            if index is None:
                break
            join(index)
        if not flights:
            return
        stepping, flights[:] = list(flights), []
        out = engine.step_greedy_many([f.state for f in stepping],
                                      [f.token for f in stepping])
        for flight, token in zip(stepping, out, strict=True):
            advance(flight, token)
