"""runtime.generate: one launch on the compiled model. The host encodes the prompt
(program, launch configuration, initial memory), feeds it, and then only feeds back what
the model writes, greedily, until the model writes HALT; nothing of the kernel is
computed here and nothing is run elsewhere in the model's place."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from qgpu.errors import LaunchError, ProtocolError, TokenError
from qgpu.interp.simt import budget_error
from qgpu.isa.program import Program
from qgpu.model.state import ModelState
from qgpu.progress import progress
from qgpu.protocol import VOCAB_SIZE, encode_prompt, kind_of, tok
from qgpu.protocol.vocab import KINDS, base
from qgpu.runtime.compiled import LaunchMachine

HALT = tok("HALT")
DEFAULT_MAX_TOKENS = 1_000_000
# The model's default block budget, sized for real kernels (issue 27: a launch of 20,000
# blocks runs without a flag): a launch that never ends (`while (1) {}`: 2 trace tokens
# per block) stops after 50,000 tokens with the interpreter's budget error, 35-70 s of
# generation at README's 750-1,400 tokens/s (100,000 tokens took 260 s of CPU, 840 s of
# wall time, on the session VM at load 7); --budget N sets another.
DEFAULT_MODEL_BUDGET = 25_000
# Launches run inside `with record_margins():` also record every written token's margin
# (the engine runners have a fixed signature; qgpu.view asks for margins this way).
_MARGINS: ContextVar[bool] = ContextVar("qgpu_record_margins", default=False)


@contextmanager
def record_margins(on: bool = True) -> Iterator[None]:
    """Within it, model launches (generate_launch's default) record margins."""
    reset = _MARGINS.set(on)
    try:
        yield
    finally:
        _MARGINS.reset(reset)


def recording_margins() -> bool:
    """Whether launches run now record margins (inside `record_margins()`)."""
    return _MARGINS.get()


def step_margin(engine, state, token: int) -> tuple[int, float]:
    """Consume `token`; (the greedy next token, its logit minus the runner-up's). Every
    logit is computed (Engine.step; about 3x a greedy step of the fast engine, whose
    argmax skips most of the head). An OffsetEngine (merged checkpoint) is stepped on its
    inner engine over the whole merged vocabulary."""
    inner = getattr(engine, "inner", None)
    if inner is not None and hasattr(engine, "offset"):
        logits = inner.step(state, engine.offset + int(token))
        best = int(np.argmax(logits))
        out = engine._out(best)
    else:
        logits = engine.step(state, int(token))
        out = best = int(np.argmax(logits))
    top = float(logits[best])
    logits[best] = -np.inf
    return out, top - float(logits.max())


@dataclass
class ModelRun:
    prompt: list[int]
    trace: list[int]  # the model's tokens, first EXEC .. HALT
    state: ModelState | None  # after HALT: the results live here (generate_many: None
    # unless asked to keep it)
    seconds: float
    memory: list[int]  # global memory read back from `state` (the memory table's rows)
    margins: list[float] | None = None  # per trace token: top-1 minus top-2 logit

    @property
    def tokens_per_second(self) -> float:
        return len(self.trace) / self.seconds if self.seconds else 0.0


def _kind(token: int, position: int) -> str:
    try:
        return kind_of(token)[0]
    except TokenError:
        raise ProtocolError(f"the model wrote token id {token} at trace position {position}, "
                            f"outside the protocol's vocabulary (0..{VOCAB_SIZE - 1}): a "
                            f"corrupted model") from None


class TraceWriter:
    """What the host does with each token the model writes, until the launch ends: the
    trace, the block budget, the TRAP record's length, the token limit. `add` takes the
    next token and says whether the launch has ended; it raises what the launch raises
    (the interpreter's budget error, LaunchError, ProtocolError) when it must stop
    without an end. Shared by one launch's loop (generate_launch) and many launches
    stepped together (runtime.generate_many), so both end every launch alike."""

    def __init__(self, max_tokens: int, max_blocks: int):
        self.max_tokens, self.max_blocks = max_tokens, max_blocks
        self.trace: list[int] = []
        self.blocks = 0
        self.trap_at: int | None = None  # the model wrote TRAP: its record is 3 tokens

    def add(self, token: int) -> bool:
        trace = self.trace
        trace.append(token)
        if token == HALT:
            return True
        if self.trap_at is not None and len(trace) >= self.trap_at + 3:
            return True
        if len(trace) >= self.max_tokens:
            raise LaunchError(f"the model wrote {self.max_tokens} tokens without HALT")
        kind = _kind(token, len(trace) - 1)
        if kind == "EXEC":
            self.blocks += 1
            if self.blocks > self.max_blocks:
                raise budget_error(self.max_blocks)
        elif kind == "TRAP" and self.trap_at is None:
            self.trap_at = len(trace) - 1
        return False


def generate_launch(machine: LaunchMachine, program: Program, grid: int, block: int,
                    memory=(), max_tokens: int = DEFAULT_MAX_TOKENS,
                    max_blocks: int = DEFAULT_MODEL_BUDGET,
                    margins: bool | None = None) -> ModelRun:
    """Run one launch on the model (a LaunchMachine: compiled here, or loaded from a merged
    or exported checkpoint). Raises the interpreter's budget error (interp.simt.
    budget_error) when the model starts block max_blocks + 1 without HALT, and LaunchError
    after max_tokens. margins: also record each written token's top-1 minus top-2 logit
    (step_margin; default: inside `record_margins()`). A model that writes TRAP ends the
    launch with that record (runtime.model_engines turns it into the fault's error)."""
    machine.check(program, grid, block)
    prompt = encode_prompt(program, grid, block, memory)
    engine = machine.engine
    state = engine.new_state()
    start = time.perf_counter()
    engine.consume(state, prompt[:-1])
    margins = _MARGINS.get() if margins is None else margins
    gaps: list[float] | None = [] if margins else None

    def recording(state, token):
        token, gap = step_margin(engine, state, token)
        gaps.append(gap)
        return token
    step = recording if margins else engine.step_greedy
    # the fast engine generates a run of tokens per call, up to a token the host acts on
    greedy_run = None if margins else getattr(engine, "greedy_run", None)
    writer = TraceWriter(max_tokens, max_blocks)
    # a bar (tokens, tokens/s, blocks of the budget) once a launch has taken 2 s, on a
    # terminal only
    with progress(desc="model launch", unit="tok", delay=2.0, miniters=64) as bar:
        if greedy_run is not None:
            _write_runs(greedy_run, host_tokens(engine.config.vocab_size), state,
                        prompt[-1], writer, bar)
        else:
            token = step(state, prompt[-1])
            while not writer.add(token):
                _blocks_postfix(writer, bar)
                token = step(state, token)
                bar.update()
    trace = writer.trace
    seconds = time.perf_counter() - start
    return ModelRun(prompt, trace, state, seconds, machine.read_memory(state), gaps)


def _blocks_postfix(writer: TraceWriter, bar) -> None:
    if writer.blocks % 256 == 0 and writer.blocks:
        bar.set_postfix_str(f"{writer.blocks:,} of {writer.max_blocks:,} blocks",
                            refresh=False)


@functools.cache
def host_tokens(vocab_size: int) -> np.ndarray:
    """uint8 over a model vocabulary: 1 at the tokens the host acts on as soon as the model
    writes them (EXEC: the block budget; TRAP: its record's length; HALT; ids outside
    the protocol's vocabulary), where a run of generated tokens stops."""
    stop = np.ones(vocab_size, np.uint8)
    stop[:min(VOCAB_SIZE, vocab_size)] = 0
    for kind in ("EXEC", "TRAP", "HALT"):
        k = KINDS[[k.name for k in KINDS].index(kind)]
        stop[base(kind):base(kind) + k.count] = 1
    stop.flags.writeable = False  # shared by every launch (cached)
    return stop


def _write_runs(greedy_run, stop: np.ndarray, state: ModelState, token: int,
                writer: TraceWriter, bar) -> None:
    """generate_launch's loop over runs of tokens (the engine's greedy_run: the tokens
    step_greedy gives one by one, up to the first the host acts on). Each run ends where
    the token-by-token loop would act (a host token, the token limit, a TRAP record's
    last token), so the model consumes the same tokens."""
    trace = writer.trace
    while True:
        limit = writer.max_tokens - len(trace)
        if writer.trap_at is not None:
            limit = min(limit, writer.trap_at + 3 - len(trace))
        tokens = greedy_run(state, token, stop, max(limit, 1))
        for token in tokens:
            if writer.add(token):
                return
            _blocks_postfix(writer, bar)
        bar.update(len(tokens))
