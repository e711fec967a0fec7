"""runtime.model_engines: the model as a launch engine (`qgpu.cuda.ENGINES["model"]`;
"model-check", which also replays the launch on the interpreter and compares every
token and the final memory; "model-forced", the same check by teacher forcing:
runtime.check.forced_launch): the same runner signature as the interpreter's, the final
memory read from the model's state."""

from __future__ import annotations

from qgpu.circuit.machine.spec import check_launch
from qgpu.cuda.api import ENGINES, EngineRun
from qgpu.errors import CheckMismatch
from qgpu.isa.faults import Fault
from qgpu.protocol import Launch, decode_trace
from qgpu.runtime.check import check_trace, forced_launch
from qgpu.runtime.compiled import DEFAULT_SPEC, load_machine
from qgpu.runtime.generate import DEFAULT_MODEL_BUDGET, generate_launch


def run_model(program, grid: int, block: int, memory, budget: int | None = None,
              check: bool = False, machine=None, forced: bool = False):
    """machine: None (the machine compiled in this process) or a loaded checkpoint's
    (runtime.checkpoint.CheckpointMachine). check: generate, then compare with the
    interpreter; forced: check by teacher forcing instead of generating. budget: blocks
    (None: DEFAULT_MODEL_BUDGET)."""
    if machine is None:
        check_launch(DEFAULT_SPEC, program, grid, block)  # a clear error before compiling
        machine = load_machine()
    else:
        machine.check(program, grid, block)
    budget = DEFAULT_MODEL_BUDGET if budget is None else budget
    expected = None
    if forced:
        run = forced_launch(machine, program, grid, block, memory, max_blocks=budget)
        expected = run.trace
    else:
        run = generate_launch(machine, program, grid, block, memory, max_blocks=budget)
        if check:
            try:
                expected = check_trace(program, grid, block, memory, run.prompt, run.trace,
                                       run.memory)
            except CheckMismatch as err:   # qgpu.view draws the mismatch with the margins
                err.margins = run.margins
                raise
    records = decode_trace(Launch(program, grid, block, list(memory)), run.trace)
    if records and records[-1].kind == "trap":   # the model detected a fault: its error
        fault = Fault(records[-1].trap)
        fault.memory = run.memory      # read from the model's state (device printf output)
        raise fault
    return EngineRun(run.memory, [r for r in records if r.kind == "exec"], run.trace,
                     run.margins, expected)


def run_model_checked(program, grid: int, block: int, memory,
                      budget: int | None = None):
    return run_model(program, grid, block, memory, budget, check=True)


def run_model_forced(program, grid: int, block: int, memory,
                     budget: int | None = None):
    return run_model(program, grid, block, memory, budget, forced=True)


ENGINES.update({"model": run_model, "model-check": run_model_checked,
                "model-forced": run_model_forced})
