"""runtime.machine: the compiled machine a process runs launches on: compiled once per
(layer shape, machine spec) and kept (the compiler caches the weights on disk; progress
goes to stderr), with the engine that runs it."""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.compile import Compiled
from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.memory import read_memory
from qgpu.circuit.machine.spec import MachineSpec
from qgpu.circuit.schedule import LayerShape
from qgpu.model.engine import Engine
from qgpu.model.fast import FastEngine

DEFAULT_SPEC = MachineSpec(slots=1)
# The fast engine's native kernel where a C compiler is available (its numpy backend,
# about 27x slower on this machine, otherwise). 2991b42..9fedd6f broke the native kernel
# on this model (a GDN layer's z/b/a slots leaked into the next layer's conv inputs);
# tests/model/test_fast_conv.py guards it.
DEFAULT_BACKEND = "auto"


@dataclass
class ModelMachine:
    compiled: Compiled
    spec: MachineSpec
    engine: Engine

    def read_memory(self, state) -> list[int]:
        """Global memory from the state (the memory table's rows: machine.memory)."""
        return read_memory(self.compiled, state)


_loaded: dict[tuple, ModelMachine] = {}


def load_machine(shape: LayerShape | None = None, spec: MachineSpec | None = None, *,
                 backend: str = DEFAULT_BACKEND, progress: bool = True) -> ModelMachine:
    """The compiled machine and a FastEngine over it (once per process and arguments)."""
    shape = shape or LayerShape.qwen35_2b()
    spec = spec or DEFAULT_SPEC
    key = (shape, spec, backend)
    if key not in _loaded:
        compiled = compile_machine(shape, spec, progress=progress)
        _loaded[key] = ModelMachine(compiled, spec, FastEngine(compiled.weights, backend))
    return _loaded[key]
