"""runtime.check: `--check`, the model's trace against the interpreter's, token by token,
in two modes:
- after generation (`check_trace`): the model wrote its trace greedily
  (runtime.generate), then it is compared with the interpreter's;
- teacher forced (`forced_launch`, `--check --forced`, engine "model-forced"): the
  prompt and the interpreter's trace go through the model as one stream of chunks
  (FastEngine.forced_greedy: each chunk one call of the batched kernel, every layer's
  products over the chunk's positions at once), and the model's greedy token at every
  position must be the trace's next token. That is equivalent to greedy generation
  writing the trace: if every argmax equals the next trace token, generation (which
  feeds back its own argmax) feeds exactly these tokens, so it writes this trace; at the
  first position where they differ, generation would write the model's token there.
  The results (global memory) are read from the model's state after the pass, as after
  generation, and compared with the interpreter's memory.
The first mismatch stops with its position, the record the interpreter expects there
and the record the model wrote (both decoded with the protocol's decoder)."""

from __future__ import annotations

import time

from qgpu.errors import CheckMismatch, ProtocolError
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.faults import Fault
from qgpu.isa.program import Program
from qgpu.progress import progress
from qgpu.protocol import (
    Launch,
    decode_prompt,
    decode_trace,
    encode_prompt,
    expected_trace,
    kind_of,
    name,
)
from qgpu.runtime.generate import ModelRun

FORCED_CHUNK = 128  # tokens per native call of the teacher-forced pass (fast_batch.c; 128 beat
# 256 and 64 in benchmarks/bench_batched_check.py: the rows of positions stay in cache)


def _record_at(launch: Launch, tokens: list[int], position: int) -> str:
    """The decoded record that contains `position` (or why it does not decode)."""
    try:
        records = decode_trace(launch, tokens)
    except ProtocolError as err:
        return f"(does not decode: {err})"
    best = None
    for rec in records:
        if rec.position <= position:
            best = rec
    return str(best) if best is not None else "(none)"


def _name(token: int | None) -> str:
    if token is None:
        return "end"
    if token < 0:  # runtime.checkpoint.OffsetEngine.forced_greedy
        return f"id {-1 - token} of the merged vocabulary (not a GPU token)"
    try:
        return name(token)
    except ValueError:
        return f"id {token} (outside the protocol's vocabulary)"


def _kind(token: int) -> str | None:
    try:
        return kind_of(token)[0]
    except ValueError:
        return None


def _tokens_of_record(tokens: list[int], position: int) -> str:
    """The model's record up to `position`: its tokens from the last EXEC on, by name."""
    position = min(position, len(tokens) - 1)
    start = position
    while start > 0 and _kind(tokens[start]) != "EXEC":
        start -= 1
    return " ".join(_name(t) for t in tokens[start:position + 1])


def check_trace(program: Program, grid: int, block: int, memory, prompt: list[int],
                trace: list[int], model_memory: list[int] | None = None) -> list[int]:
    """The interpreter's trace; raises CheckMismatch at the first difference (and, when
    model_memory, the global memory read from the model's state, is given, where it
    differs from the interpreter's)."""
    events, interp_memory = interp_launch(program, grid, block, list(memory))
    want = expected_trace(events)
    launch = decode_prompt(prompt)
    for i in range(max(len(want), len(trace))):
        a = want[i] if i < len(want) else None
        b = trace[i] if i < len(trace) else None
        if a != b:
            got_rec = _tokens_of_record(trace, i)
            trap = events[-1].trap if events else None
            what = "alignment" if trap is not None and trap.kind.startswith(
                "misaligned") else "array bounds"
            bounds = f" (the interpreter's {what} check: {trap.detail}; the model's " \
                "fault detector sees the machine's words, not the arrays or the widths " \
                "of accesses made of words)" if trap is not None and trap.detail else ""
            raise _with_traces(CheckMismatch(
                f"--check: token {i} of the trace differs: interpreter "
                f"{_name(a)}, model {_name(b)}; expected record: "
                f"{_record_at(launch, want, i)}{bounds}; model's record: {got_rec}"), want,
                trace)
    if model_memory is not None and interp_memory is not None:
        check_memory(interp_memory, list(model_memory))
    return want


def interp_launch(program: Program, grid: int, block: int, memory: list[int],
                  budget: int = limits.DEFAULT_BLOCK_BUDGET) -> tuple[list, list[int] | None]:
    """The interpreter's block events and final memory; a launch that faults gives its
    events up to the fault (the last carries the TRAP record) and no memory (a faulted
    launch has no results to compare)."""
    try:
        res = run_launch(program, grid=grid, block=block, memory=memory or None,
                         budget=budget, sizes=limits.MODEL_MEMORY)
    except Fault as fault:
        return fault.events, None
    return res.events, list(res.memory)


def _with_traces(err: CheckMismatch, expected: list[int], written: list[int]) -> CheckMismatch:
    """The mismatch with both token streams attached (`expected`, `written`: qgpu.view
    draws them)."""
    err.expected, err.written = list(expected), list(written)
    return err


def check_memory(want: list[int], got: list[int], what: str = "--check") -> None:
    """Raise CheckMismatch at the first global word the model's state holds differently."""
    for k in range(max(len(want), len(got))):
        a = want[k] if k < len(want) else None
        b = got[k] if k < len(got) else None
        if a != b:
            raise CheckMismatch(f"{what}: global memory word {k} read from the model's state "
                                f"is {b}, the interpreter's {a}")


def forced_launch(machine, program: Program, grid: int, block: int, memory=(),
                  max_blocks: int = limits.DEFAULT_BLOCK_BUDGET, expected: list[int] | None = None,
                  chunk: int = FORCED_CHUNK) -> ModelRun:
    """Check one launch on the model by teacher forcing (see the module docstring).
    machine: a runtime.compiled.LaunchMachine (compiled here, or a checkpoint's).
    expected: the trace to force (default: the interpreter's; a test passes a corrupted
    one). Raises CheckMismatch at the first position whose greedy token differs from the
    trace, and when the memory read from the model's state differs from the
    interpreter's. Returns a ModelRun whose trace is the checked trace."""
    machine.check(program, grid, block)
    memory = list(memory)
    events, interp_memory = interp_launch(program, grid, block, memory, max_blocks)
    want = expected_trace(events) if expected is None else list(expected)
    prompt = encode_prompt(program, grid, block, memory)
    engine = machine.engine
    forced = engine.forced_greedy
    state = engine.new_state()
    start = time.perf_counter()
    # one stream, in chunks (each one call of the batched kernel): the prompt, then the
    # token before each trace position; the greedy token after stream[first + i] must be
    # want[i]
    stream, first = prompt + want[:-1], len(prompt) - 1
    # a bar (tokens, tokens/s) once the pass has taken 2 s, on a terminal only
    with progress(total=len(stream), desc="model check (forced)", unit="tok",
                  delay=2.0) as bar:
        for a in range(0, len(stream), chunk):
            got = forced(state, stream[a:a + chunk])
            for j, token in enumerate(got):
                i = a + j - first
                if i >= 0 and token != want[i]:
                    raise _with_traces(CheckMismatch(_forced_mismatch(
                        prompt, want, i, token, expected is not None)), want,
                        want[:i] + [token])
            bar.update(len(got))
    seconds = time.perf_counter() - start
    run = ModelRun(prompt, want, state, seconds, machine.read_memory(state))
    if expected is None and interp_memory is not None:
        check_memory(interp_memory, run.memory, "--check --forced")
    return run


def _forced_mismatch(prompt: list[int], want: list[int], i: int, got: int,
                     given: bool) -> str:
    launch = decode_prompt(prompt)
    model = want[:i] + [got]
    source = "the given trace" if given else "interpreter"
    return (f"--check --forced: token {i} of the trace (sequence position "
            f"{len(prompt) + i}) differs: {source} {_name(want[i])}, model "
            f"{_name(got)} (the model read the {source}'s tokens before it); "
            f"expected record: {_record_at(launch, want, i)}; model's record: "
            f"{_tokens_of_record(model, i)}")
