"""runtime.compiled: the compiled machine a process runs launches on: compiled once per
(layer shape, machine spec) and kept (the compiler caches the weights on disk; progress
goes to stderr), with the engine that runs it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from qgpu.circuit.compile import Compiled
from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.memory import read_memory
from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.circuit.schedule import LayerShape
from qgpu.isa.program import Program
from qgpu.model.engine import Engine
from qgpu.model.fast import FastEngine
from qgpu.model.state import ModelState

DEFAULT_SPEC = MachineSpec(slots=1)
# The fast engine's native kernel where a C compiler is available (its numpy backend,
# much slower, otherwise). tests/model/test_fast_conv.py guards the native kernel on this
# model (a GDN layer's z/b/a slots must not leak into the next layer's conv inputs).
DEFAULT_BACKEND = "auto"


class LaunchMachine(ABC):
    """What a launch runs on, in either kind: a ModelMachine (compiled in this process)
    or a runtime.checkpoint.CheckpointMachine (a merged or exported checkpoint's). Both
    have the spec they were compiled for and an engine over their weights (token ids the
    protocol's), refuse a launch they cannot run, and read global memory from a state."""

    spec: MachineSpec
    engine: Engine  # (a CheckpointMachine's: an OffsetEngine over one)

    @abstractmethod
    def check(self, program: Program, grid: int, block: int) -> None:
        """ProgramError / LaunchError when this machine cannot run the launch."""

    @abstractmethod
    def read_memory(self, state: ModelState) -> list[int]:
        """Global memory, read from the model's recurrent state."""


@dataclass
class ModelMachine(LaunchMachine):
    compiled: Compiled
    spec: MachineSpec
    engine: Engine

    def check(self, program: Program, grid: int, block: int) -> None:
        check_launch(self.spec, program, grid, block)

    def read_memory(self, state) -> list[int]:
        """Global memory from the state (the memory table's rows: machine.memory)."""
        return read_memory(self.compiled, state)


_loaded: dict[tuple, ModelMachine] = {}


def _key(shape: LayerShape | None = None, spec: MachineSpec | None = None,
         backend: str = DEFAULT_BACKEND) -> tuple:
    return (shape or LayerShape.qwen35_2b(), spec or DEFAULT_SPEC, backend)


def load_machine(shape: LayerShape | None = None, spec: MachineSpec | None = None, *,
                 backend: str = DEFAULT_BACKEND, progress: bool = True) -> ModelMachine:
    """The compiled machine and a FastEngine over it (once per process and arguments)."""
    key = _key(shape, spec, backend)
    if key not in _loaded:
        shape, spec, _ = key
        compiled = compile_machine(shape, spec, progress=progress)
        _loaded[key] = ModelMachine(compiled, spec, FastEngine(compiled.weights, backend))
    return _loaded[key]


def loaded_machine(spec: MachineSpec | None = None) -> ModelMachine | None:
    """The default shape's machine for `spec` if this process has loaded it, else None."""
    return _loaded.get(_key(spec=spec))


def release_machines(keep_default: bool = True) -> int:
    """Forget the machines load_machine keeps (each holds a few GiB: its weights and the
    native engine's plan), all but the default shape's default machine when keep_default;
    returns how many were dropped. A later load_machine compiles (from the disk cache)
    again. For long-lived processes, such as a test worker, that load several specs."""
    dropped = [key for key in _loaded if not (keep_default and key == _key())]
    for key in dropped:
        del _loaded[key]
    return len(dropped)
