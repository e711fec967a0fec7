"""runtime.generate: one launch on the compiled model. The host encodes the prompt
(program, launch configuration, initial memory), feeds it, and then only feeds back what
the model writes, greedily, until the model writes HALT; nothing of the kernel is
computed here and nothing is run elsewhere in the model's place."""

from __future__ import annotations

import time
from dataclasses import dataclass

from qgpu.circuit.machine.spec import check_launch
from qgpu.errors import LaunchError, MachineError
from qgpu.isa import limits
from qgpu.isa.program import Program
from qgpu.model.state import ModelState
from qgpu.protocol import encode_prompt, kind_of, tok
from qgpu.runtime.compiled import ModelMachine

HALT = tok("HALT")
DEFAULT_MAX_TOKENS = 1_000_000


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


def generate_launch(machine: ModelMachine, program: Program, grid: int, block: int,
                    memory=(), max_tokens: int = DEFAULT_MAX_TOKENS,
                    max_blocks: int = limits.DEFAULT_BLOCK_BUDGET) -> ModelRun:
    """Run one launch on the model (a ModelMachine, or a runtime.checkpoint.CheckpointMachine
    loaded from a merged or exported checkpoint). Raises MachineError after `max_blocks` EXEC tokens
    without HALT (the interpreter's block budget) and LaunchError after max_tokens."""
    check_launch(machine.spec, program, grid, block)
    prompt = encode_prompt(program, grid, block, memory)
    engine = machine.engine
    state = engine.new_state()
    start = time.perf_counter()
    engine.consume(state, prompt[:-1]) if hasattr(engine, "consume") else \
        engine.prefill(state, prompt[:-1], mode="recurrent")
    token = engine.step_greedy(state, prompt[-1])
    trace = [token]
    blocks = 0
    while token != HALT:
        if len(trace) >= max_tokens:
            raise LaunchError(f"the model wrote {max_tokens} tokens without HALT")
        if kind_of(token)[0] == "EXEC":
            blocks += 1
            if blocks > max_blocks:
                raise MachineError(f"instruction budget exceeded: the model ran {max_blocks} "
                                   f"blocks without finishing (runaway loop?)")
        token = engine.step_greedy(state, token)
        trace.append(token)
    seconds = time.perf_counter() - start
    return ModelRun(prompt, trace, state, seconds, machine.read_memory(state))
