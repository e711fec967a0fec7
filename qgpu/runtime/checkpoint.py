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
recorded location. For a merge whose circuit shares the base's dims the launch engine
runs `launch_weights`: the circuit layers and the GPU rows only (offset 0), which is
exact because every base layer adds exactly 0 to a GPU token. Nothing of a launch is
computed here.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from qgpu.circuit.machine.build import compile_machine
from qgpu.circuit.machine.memory import decode_memory_rows
from qgpu.circuit.machine.spec import SUPPORTED_OPS, MachineSpec, check_launch
from qgpu.circuit.schedule import LayerShape
from qgpu.cuda.api import ENGINES
from qgpu.errors import LaunchError, ProgramError, QgpuError
from qgpu.files import is_empty_folder
from qgpu.merge.circuits import machine_info
from qgpu.merge.merge import LAYOUT_FILE
from qgpu.model.checkpoint import load_checkpoint, save_checkpoint
from qgpu.model.engine import Engine
from qgpu.model.fast import FastEngine
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.state import ModelState
from qgpu.model.weights import EMBED, FINAL_NORM, LM_HEAD, QwenWeights
from qgpu.runtime.checkpoint_check import check_checksums, check_layout
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

    def step_greedy_many(self, states: Sequence[ModelState], tokens: Sequence[int]) -> list[int]:
        """step_greedy of each state; an id outside the GPU tokens comes back as -1 - id
        (runtime.generate_many ends that launch with _out's error, the others go on)."""
        out = self.inner.step_greedy_many(states, [self.offset + int(t) for t in tokens])
        return [t - self.offset if 0 <= t - self.offset < self.tokens else -1 - t for t in out]

    def settle(self, states: Sequence[ModelState]) -> None:
        self.inner.settle(states)

    def forced_greedy(self, state: ModelState, tokens: Sequence[int]) -> list[int]:
        """Teacher forcing (FastEngine.forced_greedy); a greedy id outside the GPU tokens
        comes back as -1 - id (no GPU token: the check reports it as a mismatch)."""
        out = self.inner.forced_greedy(state, [self.offset + int(t) for t in tokens])
        return [t - self.offset if 0 <= t - self.offset < self.tokens else -1 - t for t in out]


def launch_weights(weights: QwenWeights, info: dict) -> QwenWeights:
    """What a launch needs of a merged model whose circuit shares the base's dims: the
    circuit layers, the final norm and the GPU tokens' rows of the embedding and head
    (views, no copies of dense arrays). Exact: every base layer adds exactly 0 to a GPU
    token's residual (its gates read the GPU flag; docs/merge.md), so skipping them
    leaves the final residual, and the head's GPU rows, bit-identical; text rows are
    below -1e6 at GPU positions, so the argmax over GPU rows is the model's. Also a model
    whose base has attention layers runs launches on the native kernel this way (the
    circuit's attention layer is all zero). Other checkpoints come back unchanged."""
    if info.get("layout") != "shared" or not info.get("base_layers"):
        return weights
    lc, first, count = info["circuit_layers"], info["gpu_token_offset"], info["gpu_tokens"]
    config = replace(weights.config, num_hidden_layers=lc,
                     layer_types=list(weights.config.layer_types[:lc]), vocab_size=count)
    tensors = {name: value for name, value in weights.tensors.items()
               if name == FINAL_NORM or (name.startswith("model.layers.")
                                         and int(name.split(".")[2]) < lc)}
    for name in (EMBED, LM_HEAD):
        tensors[name] = _row_range(weights[name], first, first + count)
    return QwenWeights(config, tensors)


def _row_range(tensor, start: int, stop: int):
    if not isinstance(tensor, SparseTensor):
        return tensor[start:stop]
    csr = tensor.csr()
    a, b = csr.indptr[start], csr.indptr[stop]
    return SparseTensor((stop - start, tensor.shape[1]), csr.indptr[start:stop + 1] - a,
                        csr.cols[a:b], csr.vals[a:b])


@dataclass
class CheckpointMachine(LaunchMachine):
    """engine: the launch engine (GPU token ids through `OffsetEngine`; for a shared-dims
    merge over `launch_weights` only); inner: the whole merged model (text), built on
    first use when it is not the launch engine's."""

    weights: QwenWeights | None  # None: a checkpoint's launch part only (directory)
    info: dict  # qgpu_merge.json
    engine: OffsetEngine
    spec: MachineSpec
    ops: tuple[str, ...]  # the operations the checkpoint's machine decodes
    directory: Path | None = None
    backend: str = "auto"
    _text: Engine | None = field(default=None, init=False, repr=False)

    @property
    def inner(self) -> Engine:
        """The text engine: a merged checkpoint's text half (model.text_engine: the base's
        layers, bf16 weights memory-mapped), else the whole model."""
        if self._text is None:
            if self.weights is None:
                from qgpu.model.text_engine import TextEngine

                self._text = TextEngine.from_directory(self.directory)
            else:
                whole = self.engine.inner.weights is self.weights
                self._text = self.engine.inner if whole else FastEngine(self.weights,
                                                                        self.backend)
        return self._text

    @property
    def gpu_token_offset(self) -> int:
        return int(self.info["gpu_token_offset"])

    @property
    def merged(self) -> bool:
        return self.gpu_token_offset > 0 or self.info.get("base_layers", 0) > 0

    def check(self, program, grid: int, block: int) -> None:
        """check_launch against this checkpoint's spec and recorded operations."""
        check_program(self.spec, self.ops, program, grid, block)

    def read_memory(self, state: ModelState) -> list[int]:
        where = self.info["circuit_info"]["memory"]
        table = state.recurrent[where["layer"]][where["head"]]
        return decode_memory_rows(table[:where["rows"], :where["columns"]])


def check_program(spec: MachineSpec, ops: tuple[str, ...], program, grid: int,
                  block: int) -> None:
    """check_launch against a checkpoint's spec, and every operation among `ops` (the
    operations its machine decodes)."""
    check_launch(spec, program, grid, block)
    for b, blk in enumerate(program.blocks):
        for k, stage in enumerate(blk.stages):
            for ins in stage:
                if ins.op not in ops:
                    raise ProgramError(
                        f"block {b} stage {k}: operation '{ins.op}' is not in this "
                        f"checkpoint's machine (compiled before it was added; it runs "
                        f"{', '.join(ops)}): merge or export it again")


def spec_of(info: dict, directory=None) -> tuple[MachineSpec, tuple[str, ...]]:
    """The machine spec and decoded operations recorded in qgpu_merge.json."""
    circuit = info.get("circuit_info") or {}
    if info.get("circuit") != "machine" or "memory" not in circuit:
        raise CheckpointMachineError(
            f"{directory or 'these weights'}: no machine circuit (circuit "
            f"{info.get('circuit')!r}); merge with --circuit machine or run qgpu "
            f"export-machine")
    _check_protocol(info, circuit, directory)
    fields = circuit["spec"]
    try:
        spec = MachineSpec(slots=fields["slots"], stages=fields["stages"],
                           warps=fields["warps"],
                           detect_faults=fields.get("detect_faults", False) is True)
    except ValueError as err:
        raise CheckpointMachineError(f"{directory or 'these weights'}: {LAYOUT_FILE}'s "
                                     f"machine spec: {err}") from None
    return spec, tuple(op for op in fields["ops"] if op in SUPPORTED_OPS)


def _check_protocol(info: dict, circuit: dict, directory) -> None:
    """A machine merged by a qgpu of another protocol reads other tokens: refused before a
    token is fed (its launches would run a different program, not fail cleanly)."""
    from qgpu.protocol import PROTOCOL_VERSION, VOCAB_SIZE

    version = circuit.get("protocol", 4)  # checkpoints before the field spoke v4 at most
    tokens = info.get("gpu_tokens")
    if version != PROTOCOL_VERSION or tokens != VOCAB_SIZE:
        raise CheckpointMachineError(
            f"{directory or 'these weights'}: its machine speaks protocol v{version} "
            f"({tokens} GPU tokens) and this qgpu speaks v{PROTOCOL_VERSION} "
            f"({VOCAB_SIZE}); merge the base again (qgpu merge) or export the machine "
            f"again (qgpu export-machine) with this qgpu")


def machine_from_weights(weights: QwenWeights, info: dict, backend: str = "auto",
                         directory: Path | None = None) -> CheckpointMachine:
    """A CheckpointMachine over weights in memory (merged or the machine alone) and the
    qgpu_merge.json body that describes them."""
    spec, ops = spec_of(info, directory)
    launch = launch_weights(weights, info)
    offset = info["gpu_token_offset"] if launch is weights else 0
    engine = OffsetEngine(FastEngine(launch, backend), offset, info["gpu_tokens"])
    return CheckpointMachine(weights, info, engine, spec, ops, directory, backend)


def _int_field(body: dict, key: str, path) -> int:
    v = body.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise CheckpointMachineError(f"{path}: '{key}' is {v!r:.40}, not a count")
    return v


def check_info(info: dict, path) -> dict:
    """The fields of a qgpu_merge.json body the runtime reads, checked (before any weight
    is loaded): a garbled file is a CheckpointMachineError naming the field."""
    if info.get("circuit") != "machine":
        return info   # load_machine_checkpoint says what the circuit is
    for key in ("gpu_token_offset", "gpu_tokens"):
        _int_field(info, key, path)
    circuit = info.get("circuit_info")
    if not isinstance(circuit, dict):
        raise CheckpointMachineError(f"{path}: no circuit_info object")
    spec, memory = circuit.get("spec"), circuit.get("memory")
    if not isinstance(spec, dict) or not isinstance(memory, dict):
        raise CheckpointMachineError(f"{path}: circuit_info needs 'spec' and 'memory' objects")
    for key in ("slots", "stages", "warps"):
        _int_field(spec, key, f"{path}: spec")
    ops = spec.get("ops")
    if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
        raise CheckpointMachineError(f"{path}: spec.ops is not a list of operation names")
    for key in ("layer", "head", "rows", "columns"):
        _int_field(memory, key, f"{path}: memory")
    return info


def read_info(directory: str | Path) -> dict:
    path = Path(directory) / LAYOUT_FILE
    if not Path(directory).exists():
        raise CheckpointMachineError(f"{directory} does not exist")
    if not Path(directory).is_dir():
        raise CheckpointMachineError(f"{directory} is a file, not a checkpoint directory")
    if not path.is_file():
        raise CheckpointMachineError(f"{directory} has no {LAYOUT_FILE}: not a merged or "
                                     f"exported qgpu checkpoint")
    from qgpu.model.checkpoint import CheckpointError, read_json

    try:
        return check_info(read_json(path, "the qgpu layout"), path)
    except CheckpointError as exc:
        raise CheckpointMachineError(str(exc)) from None


def load_machine_checkpoint(directory: str | Path, backend: str = "auto"
                            ) -> CheckpointMachine:
    """The machine of a merged or exported checkpoint directory on the fast engine. A
    shared-dims merge loads only what a launch needs: its stored launch plan (memory-
    mapped, like the demo machine's), or else the circuit layers, the final norm and the
    GPU rows read from the files (then stored as a plan for the next process)."""
    info = read_info(directory)
    if info.get("circuit") != "machine":
        raise CheckpointMachineError(f"{directory}: its circuit is {info.get('circuit')!r}, "
                                     f"not the machine")
    check_layout(directory, info)   # the layout file against config.json and the tensors
    if info.get("layout") != "shared" or not info.get("base_layers"):
        return machine_from_weights(load_checkpoint(directory), info, backend, Path(directory))
    spec, ops = spec_of(info, directory)
    engine = _launch_engine(Path(directory), info, backend)
    return CheckpointMachine(None, info, OffsetEngine(engine, 0, info["gpu_tokens"]), spec,
                             ops, Path(directory), backend)


def _fingerprint(directory: Path) -> str:
    """What a stored launch plan was built from: the checkpoint's files (names, sizes,
    modification and change times), its config and layout, and qgpu's sources."""
    from qgpu.model.checkpoint import checkpoint_files
    from qgpu.runtime.compiled import _SOURCES_DIGEST

    h = hashlib.sha256(str(directory.resolve()).encode() + _SOURCES_DIGEST.encode())
    for path in checkpoint_files(directory):
        st = path.stat()
        # the change time too: an edit in place moves it even when the mtime is restored
        h.update(f"{path.name}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}".encode())
    for name in ("config.json", LAYOUT_FILE):
        h.update((directory / name).read_bytes())
    return h.hexdigest()


def launch_plan_path(directory: Path) -> Path:
    """Where the launch plan of a merged checkpoint is stored (the compile cache)."""
    from qgpu.circuit.cache import cache_dir

    return cache_dir() / f"launch-{_fingerprint(directory)[:24]}.qplan"


def _launch_engine(directory: Path, info: dict, backend: str) -> Engine:
    from qgpu.model.config import QwenConfig
    from qgpu.model.plan_file import load_plan, save_plan

    path = launch_plan_path(directory)
    if backend != "numpy" and path.is_file():
        try:
            fields, meta = load_plan(path)
            return FastEngine.from_plan(QwenConfig.from_hf_dict(meta["config"]), fields)
        except (OSError, ValueError, KeyError, RuntimeError):
            pass   # unreadable, or no kernel here: read the checkpoint instead
    engine = FastEngine(launch_checkpoint_weights(directory, info), backend)
    if engine.backend == "native":
        try:
            save_plan(path, engine.plan.fields, {"config": engine.config.to_hf_dict()})
        except OSError:
            pass   # a read-only cache: the next process reads the checkpoint again
    return engine


def launch_checkpoint_weights(directory: Path, info: dict) -> QwenWeights:
    """launch_weights read from a checkpoint directory: only the circuit layers, the final
    norm and the GPU tokens' rows of the embedding and head are read."""
    from qgpu.model.checkpoint import read_config, read_text_tensors

    config = read_config(directory)[0]
    check_checksums(directory, info)   # what is read below is what qgpu merge wrote
    lc, first, count = info["circuit_layers"], info["gpu_token_offset"], info["gpu_tokens"]
    if config.tie_word_embeddings or config.num_hidden_layers < lc:
        raise CheckpointMachineError(f"{directory}: config.json does not match "
                                     f"{LAYOUT_FILE} (tied head or fewer layers)")

    def keep(name: str) -> bool:
        return name in (FINAL_NORM, EMBED, LM_HEAD) or (
            name.startswith("model.layers.") and int(name.split(".")[2]) < lc)

    tensors = read_text_tensors(directory, keep, {EMBED: (first, first + count),
                                                  LM_HEAD: (first, first + count)})
    launch = replace(config, num_hidden_layers=lc, layer_types=list(config.layer_types[:lc]),
                     vocab_size=count)
    return QwenWeights(launch, tensors)


def standalone_info(config, circuit_info: dict) -> dict:
    """qgpu_merge.json of the machine exported alone (no base: offset 0); circuit_info:
    merge.circuits.machine_info."""
    return {"circuit": "machine", "gpu_token_offset": 0, "gpu_tokens": config.vocab_size,
            "vocab_size": config.vocab_size, "circuit_layers": config.num_hidden_layers,
            "base_layers": 0, "hidden": config.hidden_size, "circuit_offset": 0,
            "tokenizer": False, "circuit_info": circuit_info}


def export_machine(out: str | Path, shape=None, spec=None, progress: bool = False) -> dict:
    """Write the compiled machine (`spec`, default the runtime's: with the fault detector)
    as a checkpoint (save_checkpoint) plus its json."""
    from qgpu.runtime.compiled import DEFAULT_SPEC

    out = Path(out)
    if out.exists() and not is_empty_folder(out):
        raise CheckpointMachineError(f"{out} exists and is not empty")
    spec = spec or DEFAULT_SPEC
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
