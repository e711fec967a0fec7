"""runtime.gguf_export: the machine's checkpoints as GGUF files for llama.cpp
(`qgpu export-gguf`): model.gguf writes the file; here the machine's side of it: the
qgpu_merge.json of a checkpoint directory, the protocol's token names for the GPU tokens
(`V(0x0000)`, ..., `HALT`), and the machine compiled here written straight to GGUF
(no safetensors on the way)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from qgpu.model.gguf import GgufError, checkpoint_to_gguf, weights_to_gguf
from qgpu.runtime.checkpoint import read_info, standalone_info


def gpu_names() -> list[str]:
    from qgpu.protocol import VOCAB_SIZE, name

    return [name(i) for i in range(VOCAB_SIZE)]


def _names(info: dict) -> list[str] | None:
    return gpu_names() if info.get("circuit") == "machine" else None


def export_gguf(model: str | Path, out: str | Path,
                progress: Callable[[str], None] | None = None, policy: str = "exact") -> dict:
    """A merged or `qgpu export-machine` checkpoint directory as a GGUF file (policy:
    `model.gguf_types`)."""
    info = read_info(model)
    return checkpoint_to_gguf(model, out, info, _names(info), progress, policy)


def machine_gguf(out: str | Path, spec=None, shape=None, progress: bool = False,
                 policy: str = "exact") -> dict:
    """The compiled machine (`spec`, default the runtime's) straight to a GGUF file, as
    `qgpu export-machine` then `export_gguf` would write it."""
    from qgpu.circuit.machine.build import compile_machine
    from qgpu.circuit.schedule import LayerShape
    from qgpu.merge.circuits import machine_info
    from qgpu.runtime.compiled import DEFAULT_SPEC

    out = Path(out)
    if out.exists():
        raise GgufError(f"{out} exists")
    spec = spec or DEFAULT_SPEC
    compiled = compile_machine(shape or LayerShape.qwen35_2b(), spec, progress=progress)
    config = compiled.weights.config
    info = standalone_info(config, machine_info(compiled, spec))
    size = weights_to_gguf(compiled.weights, info, out, names=gpu_names(), policy=policy)
    return {"out": str(out), "bytes": size, "layers": config.num_hidden_layers,
            "hidden": config.hidden_size, "vocab": config.vocab_size,
            "gpu_token_offset": 0}
