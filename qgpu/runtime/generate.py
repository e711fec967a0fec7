"""runtime.generate: one launch on the compiled model. The host encodes the prompt
(program, launch configuration, initial memory), feeds it, and then only feeds back what
the model writes, greedily, until the model writes HALT; nothing of the kernel is
computed here and nothing is run elsewhere in the model's place."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from qgpu.errors import LaunchError, MachineError
from qgpu.isa import limits
from qgpu.isa.program import Program
from qgpu.model.state import ModelState
from qgpu.progress import progress
from qgpu.protocol import encode_prompt, kind_of, tok
from qgpu.runtime.compiled import LaunchMachine

HALT = tok("HALT")
DEFAULT_MAX_TOKENS = 1_000_000
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
    state: ModelState  # after HALT: the results live here
    seconds: float
    memory: list[int]  # global memory read back from `state` (the memory table's rows)
    margins: list[float] | None = None  # per trace token: top-1 minus top-2 logit

    @property
    def tokens_per_second(self) -> float:
        return len(self.trace) / self.seconds if self.seconds else 0.0


def generate_launch(machine: LaunchMachine, program: Program, grid: int, block: int,
                    memory=(), max_tokens: int = DEFAULT_MAX_TOKENS,
                    max_blocks: int = limits.DEFAULT_BLOCK_BUDGET,
                    margins: bool | None = None) -> ModelRun:
    """Run one launch on the model (a LaunchMachine: compiled here, or loaded from a merged
    or exported checkpoint). Raises MachineError after `max_blocks` EXEC tokens without
    HALT (the interpreter's block budget) and LaunchError after max_tokens.
    margins: also record each written token's top-1 minus top-2 logit (step_margin;
    default: inside `record_margins()`)."""
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
    token = step(state, prompt[-1])
    trace = [token]
    blocks = 0
    # a bar (tokens, tokens/s) once a launch has taken 2 s, on a terminal only
    with progress(desc="model launch", unit="tok", delay=2.0, miniters=64) as bar:
        while token != HALT:
            if len(trace) >= max_tokens:
                raise LaunchError(f"the model wrote {max_tokens} tokens without HALT")
            if kind_of(token)[0] == "EXEC":
                blocks += 1
                if blocks > max_blocks:
                    raise MachineError(f"instruction budget exceeded: the model ran "
                                       f"{max_blocks} blocks without finishing (runaway loop?)")
            token = step(state, token)
            trace.append(token)
            bar.update()
    seconds = time.perf_counter() - start
    return ModelRun(prompt, trace, state, seconds, machine.read_memory(state), gaps)
