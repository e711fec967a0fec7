"""runtime.compiled: the compiled machine a process runs launches on, with the engine that
runs it, once per (layer shape, machine spec, backend).

Two ways in, the same machine:
- from the engine-plan store: the native kernel's plan of the machine (model.fast_plan's
  fields), one file memory-mapped on load (model.plan_file), in the compile cache's
  directory, keyed by the shape, the spec and a digest of the sources the machine and its
  plan are built from (qgpu's packages but the front end and the tools). Loading is
  opening the file: no circuit is built, no weight read; pages come in as the kernel
  touches them;
- by compiling (circuit.compile: the circuit is built and scheduled, the weights read
  from the disk cache or emitted; progress on stderr), which also writes the store.
A machine loaded from the store compiles its `compiled` (weights, schedule, thresholds)
only when something asks for it (margins, tests, merging).
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from abc import ABC, abstractmethod
from pathlib import Path

from qgpu.circuit.cache import cache_dir
from qgpu.circuit.compile import Compiled
from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.memory import decode_memory_rows, memory_location
from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.circuit.schedule import LayerShape
from qgpu.files import (
    OutputError,
    StoredFileError,
    clean_leftovers,
    folder_problem,
    note_folder_problem,
)
from qgpu.isa import limits
from qgpu.isa.program import Program
from qgpu.model.config import QwenConfig
from qgpu.model.engine import Engine
from qgpu.model.fast import FastEngine
from qgpu.model.plan_file import load_plan, save_plan
from qgpu.model.state import ModelState

DEFAULT_SPEC = MachineSpec(slots=1, detect_faults=True)  # machine.faults: TRAP records
# The fast engine's native kernel where a C compiler is available (its numpy backend,
# much slower, otherwise). tests/model/test_fast_conv.py guards the native kernel on this
# model (a GDN layer's z/b/a slots must not leak into the next layer's conv inputs).
DEFAULT_BACKEND = "auto"
_QGPU = Path(__file__).resolve().parents[1]
KEEP_PLANS = 3  # plans kept per (shape, spec): the newest sources'
_NOT_HASHED = ("cli", "chat", "cuda", "validate", "merge")  # the machine does not read them


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


class ModelMachine(LaunchMachine):
    """A compiled machine and the engine that runs it. `compiled` is built on first use
    when the machine came from the plan store (`shape` then names what to compile)."""

    def __init__(self, compiled: Compiled | None, spec: MachineSpec, engine: Engine,
                 memory_at: tuple[int, int] | None = None, shape: LayerShape | None = None):
        self._compiled, self.spec, self.engine, self.shape = compiled, spec, engine, shape
        self.memory_at = memory_at or memory_location(self.compiled)

    @property
    def compiled(self) -> Compiled:
        if self._compiled is None:
            self._compiled = compile_machine(self.shape, self.spec)
        return self._compiled

    def check(self, program: Program, grid: int, block: int) -> None:
        check_launch(self.spec, program, grid, block)

    def read_memory(self, state) -> list[int]:
        """Global memory from the state (the memory table's rows: machine.memory)."""
        layer, head = self.memory_at
        return decode_memory_rows(state.recurrent[layer][head, :limits.MODEL_GLOBAL_WORDS, :64])


_loaded: dict[tuple, ModelMachine] = {}
_loading = threading.Lock()  # threads launching at once compile or load a machine once


def _key(shape: LayerShape | None = None, spec: MachineSpec | None = None,
         backend: str = DEFAULT_BACKEND) -> tuple:
    return (shape or LayerShape.qwen35_2b(), spec or DEFAULT_SPEC, backend)


def _sources_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(_QGPU.rglob("*")):
        rel = path.relative_to(_QGPU)
        if path.suffix in (".py", ".c") and rel.parts[0] not in _NOT_HASHED:
            h.update(str(rel).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


# Taken at import (as circuit.cache's key): a plan is labelled by the code that made it.
_SOURCES_DIGEST = _sources_digest()


def plan_path(shape: LayerShape, spec: MachineSpec) -> Path:
    """Where the engine plan of (shape, spec) is stored for the current sources."""
    which = hashlib.sha256(repr((shape.describe(), repr(spec))).encode()).hexdigest()[:16]
    return cache_dir() / f"plan-{which}-{_SOURCES_DIGEST[:16]}.qplan"


def _forget_old_plans(path: Path, keep: int = KEEP_PLANS) -> None:
    """Delete all but the `keep` newest plans of this (shape, spec) (older sources'; a
    process that maps one keeps its pages)."""
    which = path.name.split("-")[1]
    plans = sorted(path.parent.glob(f"plan-{which}-*.qplan"), key=lambda p: p.stat().st_mtime)
    for old in plans[:-keep]:
        old.unlink(missing_ok=True)


def _from_store(shape: LayerShape, spec: MachineSpec) -> ModelMachine | None:
    path = plan_path(shape, spec)
    if not path.exists():
        return None
    try:
        fields, meta = load_plan(path)
        engine = FastEngine.from_plan(QwenConfig.from_hf_dict(meta["config"]), fields)
    except StoredFileError as err:  # never run: named, deleted, built again
        print(f"qgpu: {err}: deleted, building the machine again", file=sys.stderr,
              flush=True)
        path.unlink(missing_ok=True)
        return None
    except (OSError, ValueError, KeyError, RuntimeError):
        return None  # unreadable or no kernel here: compile instead
    return ModelMachine(None, spec, engine, tuple(meta["memory_at"]), shape)


def _store(machine: ModelMachine, shape: LayerShape) -> None:
    engine = machine.engine
    if not isinstance(engine, FastEngine) or engine.backend != "native" \
            or os.environ.get("QGPU_PLAN_STORE", "1") == "0":
        return
    meta = {"config": engine.config.to_hf_dict(), "memory_at": list(machine.memory_at)}
    target = plan_path(shape, machine.spec)
    problem = folder_problem(target.parent)
    if problem:  # said once with the compile cache's note on the same folder
        note_folder_problem(problem, "the engine plan is not stored")
        return
    clean_leftovers(target.parent)  # killed writers' temporaries
    try:
        path = save_plan(target, engine.plan.fields, meta)
        _forget_old_plans(path)
    except (OSError, OutputError) as err:  # a read-only or full cache: compiled again later
        print(f"qgpu: the engine plan was not stored ({err})", file=sys.stderr, flush=True)


def load_machine(shape: LayerShape | None = None, spec: MachineSpec | None = None, *,
                 backend: str = DEFAULT_BACKEND, progress: bool = True) -> ModelMachine:
    """The compiled machine and a FastEngine over it (once per process and arguments):
    from the plan store when it holds this machine (and the backend may be native), else
    compiled (and stored)."""
    key = _key(shape, spec, backend)
    machine = _loaded.get(key)
    if machine is not None:
        return machine
    with _loading:
        return _load(key, progress)


def _load(key: tuple, progress: bool) -> ModelMachine:
    if key not in _loaded:
        shape, spec, backend = key
        machine = _from_store(shape, spec) if backend != "numpy" else None
        if machine is None:
            compiled = compile_machine(shape, spec, progress=progress)
            machine = ModelMachine(compiled, spec, FastEngine(compiled.weights, backend),
                                   shape=shape)
            _store(machine, shape)
        _loaded[key] = machine
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
