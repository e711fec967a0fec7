"""analysis.suite_margins: analysis.margins over machine launches. A launch's tokens are the
prompt and the interpreter's expected trace, fed as one teacher-forced sequence to the
compiled machine (numpy fast engine, observed), so a whole launch is measured in one pass
and the argmax at every trace position is checked against the trace; the suite's
launches that the machine accepts (`spec.check_launch`) are measured one by one.

    machine = load_margin_machine()   # or runtime.compiled.load_machine()
    report = launch_margins(machine, program, grid, block, memory)
    for case, report_or_reason in suite_margins(machine): ...
    for case, report_or_reason, seconds in pool_margins(pool, items): ...   # e.g. on Ray

pool_margins measures launches in batches on a campaign pool's workers (qgpu.campaign;
`--ray` of benchmarks/margins_model.py), each of which compiles the margin machine once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial

from qgpu import suite
from qgpu.analysis.margins import MarginReport, margin_report
from qgpu.campaign import batched
from qgpu.circuit.compile import Compiled
from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.multiply import UNIT
from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.cuda.shape import launch_shape
from qgpu.errors import QgpuError
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.program import Program
from qgpu.model.fast_numpy import NumpyFastEngine
from qgpu.protocol import encode_prompt, expected_trace
from qgpu.runtime.compiled import DEFAULT_SPEC, loaded_machine


@dataclass
class MarginMachine:
    """The compiled machine without runtime.compiled's FastEngine (whose native plan
    holds several GiB): what launch_margins needs."""

    compiled: Compiled
    spec: MachineSpec


_machines: dict[MachineSpec, MarginMachine] = {}


def load_margin_machine(spec: MachineSpec | None = None, progress: bool = False):
    """The default shape's machine for `spec` (runtime.compiled's DEFAULT_SPEC), once per
    process; the compiled weights of runtime.compiled's machine when it is loaded already
    (a second copy would cost a few GiB)."""
    spec = spec or DEFAULT_SPEC
    if spec not in _machines:
        loaded = loaded_machine(spec)
        compiled = loaded.compiled if loaded else compile_machine(spec=spec, progress=progress)
        _machines[spec] = MarginMachine(compiled, spec)
    return _machines[spec]


def machine_raw_grid(name: str) -> float | None:
    """The granularity of the machine's RAW unit outputs: multiply's partial sums, clz's
    count, the atomics' column counts and the barrier detector's lane counts are integers
    n held as n * UNIT."""
    return UNIT if name.startswith(("mul.", "clz.", "atom.gated.", "barrier.")) else None


_engines: dict[int, NumpyFastEngine] = {}


def release_margin_machines() -> None:
    """Forget the margin machines and numpy engines kept per process (a few GiB each)."""
    _machines.clear()
    _engines.clear()


def numpy_engine(machine) -> NumpyFastEngine:
    """A numpy fast engine over the machine's weights (one per machine)."""
    key = id(machine.compiled.weights)
    if key not in _engines:
        _engines[key] = NumpyFastEngine(machine.compiled.weights)
    return _engines[key]


def launch_tokens(program: Program, grid: int, block: int, memory=()) -> tuple[list[int], int]:
    """(prompt + the interpreter's expected trace, the prompt's length)."""
    prompt = encode_prompt(program, grid, block, list(memory))
    trace = expected_trace(run_launch(program, grid, block, memory=list(memory),
                                      sizes=limits.MODEL_MEMORY).events)
    return prompt + trace, len(prompt)


def launch_margins(machine, program: Program, grid: int, block: int, memory=(),
                   **kwargs) -> MarginReport:
    """The margin report of one launch (check_launch first: refused launches raise).
    machine: anything with .compiled and .spec (runtime.compiled.ModelMachine,
    MarginMachine); kwargs go to analysis.margins.margin_report (chunk, progress)."""
    check_launch(machine.spec, program, grid, block)
    tokens, start = launch_tokens(program, grid, block, memory)
    return margin_report(machine.compiled, tokens, start, engine=numpy_engine(machine),
                         raw_grid=machine_raw_grid, **kwargs)


def suite_cases(machine, names=None, per_kernel: bool = False,
                max_positions: int | None = None):
    """(case id, (program, grid, block, memory)) for every suite launch the machine
    accepts, (case id, reason) for the others; per_kernel and max_positions as in
    suite_margins."""
    for spec in suite.load_suite():
        if names and spec.name not in names:
            continue
        accepted = []
        for index, launch in enumerate(spec.launches):
            case = spec.case_id(index)
            try:
                shape = launch_shape(launch["grid"], launch["block"])
                grid, block = shape.ctas, shape.threads
                function = suite.compiled_module(spec.source).get_function(spec.kernel)
                args = suite.positional_args(spec, launch["args"])
                program, memory, _, _ = function.link(launch["grid"], launch["block"], args)
                check_launch(machine.spec, program, grid, block)
            except QgpuError as exc:
                yield case, f"{type(exc).__name__}: {exc}"
                continue
            rank = None
            if per_kernel or max_positions is not None:   # the interpreter's trace length
                positions = len(launch_tokens(program, grid, block, memory)[0])
                if max_positions is not None and positions > max_positions:
                    continue
                rank = (limits.launch_warps(grid, block) < 2, positions)
            accepted.append((rank, case, program, grid, block, memory))
        if per_kernel and accepted:
            accepted = [min(accepted, key=lambda a: a[0])]
        for _, case, program, grid, block, memory in accepted:
            yield case, (program, grid, block, memory)


def suite_margins(machine, names=None, per_kernel: bool = False,
                  max_positions: int | None = None,
                  **kwargs) -> Iterator[tuple[str, MarginReport | str]]:
    """(case id, report) for every suite launch the machine accepts, (case id, reason)
    for the others. per_kernel: one launch per kernel, its shortest multi-warp launch (its
    shortest launch if it has none); max_positions: only launches of at most that many
    positions (prompt + trace). The whole suite is ~255,000 positions, about an hour at
    the instrumented engine's ~70 positions/s on one core (benchmarks/margins_model.py
    --jobs N measures N launches at a time)."""
    for case, launch in suite_cases(machine, names, per_kernel, max_positions):
        if isinstance(launch, str):
            yield case, launch
        else:
            yield case, launch_margins(machine, *launch, **kwargs)


def measure(machine, item: tuple, **kwargs) -> tuple[str, MarginReport | str, float]:
    """(case, report or reason, seconds) of one of suite_cases' items (a reason passes
    through unmeasured); kwargs go to launch_margins."""
    case, launch = item
    if isinstance(launch, str):
        return case, launch, 0.0
    start = time.perf_counter()
    return case, launch_margins(machine, *launch, **kwargs), time.perf_counter() - start


def measure_batch(machine, items: Sequence[tuple]) -> list[tuple]:
    """A campaign batch (qgpu.campaign's task): measure each item, in order."""
    return [measure(machine, item) for item in items]


def margin_worker(spec: MachineSpec | None = None) -> MarginMachine:
    """A campaign worker's machine (qgpu.campaign's setup): the margin machine and its
    numpy engine, built once per worker process."""
    machine = load_margin_machine(spec)
    numpy_engine(machine)
    return machine


def pool_margins(pool, items: Sequence[tuple], spec: MachineSpec | None = None,
                 batch: int = 1) -> Iterator[tuple[str, MarginReport | str, float]]:
    """measure() of every item (suite_cases' items, or any (case, (program, grid, block,
    memory))) on a campaign pool's workers, `batch` launches a task (a launch is seconds to
    minutes: one a task keeps the workers busy to the end), in the items' order."""
    for results in pool.map(measure_batch, batched(items, batch), partial(margin_worker, spec),
                            desc="margins", unit="launch"):
        yield from results
