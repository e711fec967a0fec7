"""circuit.compile: the compiler's entry point.

    compiled = compile_circuit(circuit, LayerShape.small(), progress=True)
    compiled.weights        # QwenWeights: FastEngine, ReferenceEngine, save_checkpoint
    compiled.plan           # layers, heads, units, dims (schedule.Plan)
    compiled.thresholds     # every step placed, for qgpu.analysis's margin reports

A second compile of the same (circuit, shape, options) with the same compiler source is
read from the on-disk cache (qgpu.circuit.cache); scheduling is redone (it is cheap and
the plan is needed for the doc, docgen.circuit_doc), emission is skipped.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

from qgpu.circuit import cache as disk
from qgpu.circuit.emit import emit
from qgpu.circuit.ir import Circuit
from qgpu.circuit.schedule import LayerShape, Plan, schedule
from qgpu.errors import QgpuError
from qgpu.files import note_folder_problem
from qgpu.model.weights import QwenWeights
from qgpu.primitives import Threshold


@dataclass
class Compiled:
    circuit: Circuit
    shape: LayerShape
    plan: Plan
    weights: QwenWeights
    thresholds: list[Threshold]
    key: str
    from_cache: bool
    seconds: float


def compile_circuit(circuit: Circuit, shape: LayerShape, *, reuse_dims: bool = True,
                    max_layers: int | None = None, cache: bool | str | Path = True,
                    progress: bool = False) -> Compiled:
    """Compile `circuit` for `shape`. max_layers: the narrowest plan within this many
    layers (`schedule`), else the default trade. cache: True (the default cache dir), a
    directory, or False (always emit, write nothing)."""
    start = time.perf_counter()
    plan = schedule(circuit, shape, reuse_dims=reuse_dims, max_layers=max_layers)
    options = {"reuse_dims": reuse_dims}
    if max_layers is not None:
        options["max_layers"] = max_layers
    key = disk.cache_key(circuit.describe(), shape.describe(), options)
    directory = None if cache is True or cache is False else Path(cache)
    hit = disk.load(key, directory, progress=progress) if cache is not False else None
    if hit is not None:
        weights, thresholds = hit
        if progress:
            print(f"qgpu compile {circuit.name}: {plan.n_layers} layers from the cache",
                  file=sys.stderr, flush=True)
    else:
        problem = disk.problem_before_compile(directory) if cache is not False else None
        if problem:  # said before the compile, not after it: the result is still given
            note_folder_problem(problem, "compiling without saving it", "qgpu compile")
        emitted = emit(plan, progress=progress)
        weights, thresholds = emitted.weights, emitted.thresholds
        if cache is not False and not problem:
            try:
                disk.save(key, weights, thresholds, directory)
            except (OSError, QgpuError) as err:  # the compile's result is still used
                print(f"qgpu compile: not saved in the cache ({err})", file=sys.stderr,
                      flush=True)
    return Compiled(circuit, shape, plan, weights, thresholds, key, hit is not None,
                    time.perf_counter() - start)
