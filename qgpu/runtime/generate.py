"""runtime.generate: one launch on the compiled model. The host encodes the prompt
(program, launch configuration, initial memory), feeds it, and then only feeds back what
the model writes, greedily, until the model writes HALT; nothing of the kernel is
computed here and nothing is run elsewhere in the model's place."""

from __future__ import annotations

import time
from dataclasses import dataclass

from qgpu.errors import LaunchError, ProtocolError, TokenError
from qgpu.interp.simt import budget_error
from qgpu.isa.program import Program
from qgpu.model.state import ModelState
from qgpu.protocol import VOCAB_SIZE, encode_prompt, kind_of, tok
from qgpu.runtime.compiled import LaunchMachine

HALT = tok("HALT")
DEFAULT_MAX_TOKENS = 1_000_000
# The model's default block budget: a runaway launch (`while (1) {}`: 2 trace tokens per
# block) ends after ~8,000 tokens, ~25 s of generation at 330 tokens/s, with the
# interpreter's budget error; the suite's longest launch (is_prime) runs 1,653 blocks.
DEFAULT_MODEL_BUDGET = 4_000


@dataclass
class ModelRun:
    prompt: list[int]
    trace: list[int]  # the model's tokens, first EXEC .. HALT
    state: ModelState  # after HALT: the results live here
    seconds: float
    memory: list[int]  # global memory read back from `state` (the memory table's rows)

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


def generate_launch(machine: LaunchMachine, program: Program, grid: int, block: int,
                    memory=(), max_tokens: int = DEFAULT_MAX_TOKENS,
                    max_blocks: int = DEFAULT_MODEL_BUDGET) -> ModelRun:
    """Run one launch on the model (a LaunchMachine: compiled here, or loaded from a merged
    or exported checkpoint). Raises the interpreter's budget error (interp.simt.
    budget_error) when the model starts block max_blocks + 1 without HALT, and LaunchError
    after max_tokens."""
    machine.check(program, grid, block)
    prompt = encode_prompt(program, grid, block, memory)
    engine = machine.engine
    state = engine.new_state()
    start = time.perf_counter()
    engine.consume(state, prompt[:-1])
    token = engine.step_greedy(state, prompt[-1])
    trace = [token]
    blocks = 0
    while token != HALT:
        if len(trace) >= max_tokens:
            raise LaunchError(f"the model wrote {max_tokens} tokens without HALT")
        if _kind(token, len(trace) - 1) == "EXEC":
            blocks += 1
            if blocks > max_blocks:
                raise budget_error(max_blocks)
        token = engine.step_greedy(state, token)
        trace.append(token)
    seconds = time.perf_counter() - start
    return ModelRun(prompt, trace, state, seconds, machine.read_memory(state))
