"""One launch on the interpreter and on the compiled model, compared: the helper the
runtime tests share (tests/runtime/test_*.py)."""

from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace
from qgpu.runtime.generate import generate_launch


def run_both(machine, text: str, grid: int = 1, block: int = 4, memory=()):
    """(interpreter result, expected trace, model run) of the assembly `text`."""
    prog = assemble(text)
    res = run_launch(prog, grid, block, memory=list(memory))
    want = expected_trace(res.events)
    run = generate_launch(machine, prog, grid, block, list(memory), max_tokens=len(want) + 8)
    return res, want, run


def assert_token_exact(machine, text: str, grid: int = 1, block: int = 4, memory=()):
    """The model's trace equals the interpreter's and the memory read from the model's
    state equals the interpreter's final memory; returns (interpreter result, run)."""
    res, want, run = run_both(machine, text, grid, block, memory)
    assert run.trace == want
    assert run.memory == res.memory
    return res, run
