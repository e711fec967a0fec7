"""runtime.checkpoint: the machine from a checkpoint directory, for launches in a later
process: a merged checkpoint (`qgpu merge --circuit machine`) or a standalone exported
machine (`qgpu export-machine`). Both carry `qgpu_merge.json` (merge.merge.LAYOUT_FILE):
the machine's spec and source digest, the GPU token offset (the base's vocabulary size;
0 for a standalone machine), and where the memory table is (layer, value head).

    machine = load_machine_checkpoint("merged")        # FastEngine over the checkpoint
    run = generate_launch(machine, program, 1, 4, memory)   # tokens offset by the engine
    run.memory                                          # read from the merged state

`CheckpointMachine` quacks like runtime.compiled.ModelMachine for `generate_launch`: its
engine is an `OffsetEngine` that feeds GPU token t as id offset + t and hands back the
model's token minus the offset (a model that writes a text token at a GPU position is an
error, not a guess), and `read_memory(state)` decodes the memory table's rows at the
recorded location. Nothing of a launch is computed here.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.memory import decode_memory_rows
from qgpu.circuit.machine.spec import SUPPORTED_OPS, MachineSpec, check_launch
from qgpu.circuit.schedule import LayerShape
from qgpu.cuda.api import ENGINES
from qgpu.errors import LaunchError, ProgramError, QgpuError
from qgpu.merge.circuits import machine_info
from qgpu.merge.merge import LAYOUT_FILE
from qgpu.model.checkpoint import load_checkpoint, save_checkpoint
from qgpu.model.engine import Engine
from qgpu.model.fast import FastEngine
from qgpu.model.state import ModelState
from qgpu.model.weights import QwenWeights
from qgpu.runtime.compiled import LaunchMachine
from qgpu.runtime.model_engines import run_model


class CheckpointMachineError(QgpuError):
    """A checkpoint directory without a machine the runtime can drive."""


class OffsetEngine:
    """An engine over a merged vocabulary seen through the circuit's own token ids."""

    def __init__(self, engine: Engine, offset: int, tokens: int):
        self.inner, self.offset, self.tokens = engine, int(offset), int(tokens)

    def new_state(self) -> ModelState:
        return self.inner.new_state()

    def _out(self, token: int) -> int:
        local = int(token) - self.offset
        if not 0 <= local < self.tokens:
            raise LaunchError(f"the model wrote token id {token} at a GPU position, outside "
                              f"the GPU tokens [{self.offset}, {self.offset + self.tokens})")
        return local

    def consume(self, state: ModelState, tokens: Sequence[int]) -> None:
        self.inner.consume(state, [self.offset + int(t) for t in tokens])

    def step_greedy(self, state: ModelState, token: int) -> int:
        return self._out(self.inner.step_greedy(state, self.offset + int(token)))

    def forced_greedy(self, state: ModelState, tokens: Sequence[int]) -> list[int]:
        """Teacher forcing (FastEngine.forced_greedy); a greedy id outside the GPU tokens
        comes back as -1 - id (no GPU token: the check reports it as a mismatch)."""
        out = self.inner.forced_greedy(state, [self.offset + int(t) for t in tokens])
        return [t - self.offset if 0 <= t - self.offset < self.tokens else -1 - t for t in out]


@dataclass
class CheckpointMachine(LaunchMachine):
    weights: QwenWeights
    info: dict  # qgpu_merge.json
    engine: OffsetEngine
    spec: MachineSpec
    ops: tuple[str, ...]  # the operations the checkpoint's machine decodes
    directory: Path | None = None
    inner: Engine = field(init=False)

    def __post_init__(self):
        self.inner = self.engine.inner

    @property
    def gpu_token_offset(self) -> int:
        return self.engine.offset

    @property
    def merged(self) -> bool:
        return self.engine.offset > 0 or self.info.get("base_layers", 0) > 0

    def check(self, program, grid: int, block: int) -> None:
        """check_launch against this checkpoint's spec and recorded operations."""
        check_launch(self.spec, program, grid, block)
        for b, blk in enumerate(program.blocks):
            for k, stage in enumerate(blk.stages):
                for ins in stage:
                    if ins.op not in self.ops:
                        raise ProgramError(
                            f"block {b} stage {k}: operation '{ins.op}' is not in this "
                            f"checkpoint's machine (compiled before it was added; it runs "
                            f"{', '.join(self.ops)}): merge or export it again")

    def read_memory(self, state: ModelState) -> list[int]:
        where = self.info["circuit_info"]["memory"]
        table = state.recurrent[where["layer"]][where["head"]]
        return decode_memory_rows(table[:where["rows"], :where["columns"]])


def machine_from_weights(weights: QwenWeights, info: dict, backend: str = "auto",
                         directory: Path | None = None) -> CheckpointMachine:
    """A CheckpointMachine over weights in memory (merged or the machine alone) and the
    qgpu_merge.json body that describes them."""
    circuit = info.get("circuit_info") or {}
    if info.get("circuit") != "machine" or "memory" not in circuit:
        raise CheckpointMachineError(
            f"{directory or 'these weights'}: no machine circuit (circuit "
            f"{info.get('circuit')!r}); merge with --circuit machine or run qgpu "
            f"export-machine")
    spec_fields = circuit["spec"]
    spec = MachineSpec(slots=spec_fields["slots"], stages=spec_fields["stages"],
                       warps=spec_fields["warps"])
    ops = tuple(op for op in spec_fields["ops"] if op in SUPPORTED_OPS)
    engine = OffsetEngine(FastEngine(weights, backend), info["gpu_token_offset"],
                          info["gpu_tokens"])
    return CheckpointMachine(weights, info, engine, spec, ops, directory)


def read_info(directory: str | Path) -> dict:
    path = Path(directory) / LAYOUT_FILE
    if not path.is_file():
        raise CheckpointMachineError(f"{directory} has no {LAYOUT_FILE}: not a merged or "
                                     f"exported qgpu checkpoint")
    return json.loads(path.read_text())


def load_machine_checkpoint(directory: str | Path, backend: str = "auto"
                            ) -> CheckpointMachine:
    """The machine of a merged or exported checkpoint directory on the fast engine."""
    info = read_info(directory)
    if info.get("circuit") != "machine":
        raise CheckpointMachineError(f"{directory}: its circuit is {info.get('circuit')!r}, "
                                     f"not the machine")
    return machine_from_weights(load_checkpoint(directory), info, backend, Path(directory))


def standalone_info(config, circuit_info: dict) -> dict:
    """qgpu_merge.json of the machine exported alone (no base: offset 0); circuit_info:
    merge.circuits.machine_info."""
    return {"circuit": "machine", "gpu_token_offset": 0, "gpu_tokens": config.vocab_size,
            "vocab_size": config.vocab_size, "circuit_layers": config.num_hidden_layers,
            "base_layers": 0, "hidden": config.hidden_size, "circuit_offset": 0,
            "tokenizer": False, "circuit_info": circuit_info}


def export_machine(out: str | Path, shape=None, spec=None, progress: bool = False) -> dict:
    """Write the compiled machine as a checkpoint (save_checkpoint) plus its json."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise CheckpointMachineError(f"{out} exists and is not empty")
    spec = spec or MachineSpec(slots=1)
    compiled = compile_machine(shape or LayerShape.qwen35_2b(), spec, progress=progress)
    save_checkpoint(compiled.weights, out)
    info = standalone_info(compiled.weights.config, machine_info(compiled, spec))
    (out / LAYOUT_FILE).write_text(json.dumps(info, indent=1) + "\n")
    return info


def engine_name(machine: CheckpointMachine, check: bool = False, forced: bool = False) -> str:
    """Register this machine as a launch engine of the CUDA API (qgpu.cuda.ENGINES) and
    return its name: `kernel(grid, block, args, engine=engine_name(machine))`. forced:
    the check by teacher forcing (runtime.check.forced_launch)."""
    kind = "model-forced" if forced else "model-check" if check else "model"
    name = f"{kind}:{machine.directory or id(machine)}"
    # a weak reference: the registry must not keep a machine (a few GiB) alive after its
    # owner lets it go; the name is valid while the machine is
    held = weakref.ref(machine)

    def runner(program, grid, block, memory, budget):
        live = held()
        if live is None:
            raise CheckpointMachineError(f"engine {name!r}: its machine was freed; call "
                                         f"engine_name again with a loaded machine")
        return run_model(program, grid, block, memory, budget, check=check, machine=live,
                         forced=forced)

    ENGINES[name] = runner
    return name
