"""merge.source: the base model's weights, read lazily in row blocks.

A merge never needs the whole base in memory: each merged tensor is written block by
block from the matching rows of one base tensor. Two sources give the same interface
(`config`, `shape(name)`, `rows(name, start, stop)` as float32, names as in
`Qwen3_5ForCausalLM`; a tied base answers `lm_head.weight` with the embedding):
- `WeightsSource`: a `QwenWeights` in memory (tests, benchmarks);
- `CheckpointSource`: a model directory, ours or a Qwen3.5 release (text weights under
  `model.language_model.*`, vision tower and `mtp.*` ignored, sharded, bf16/f16/f32);
  each block is read through a memory map of just its bytes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from qgpu.model.checkpoint import (
    _DTYPES,
    CheckpointError,
    checkpoint_files,
    read_config,
    read_safetensors_header,
    text_name,
)
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights, expected_shapes

CARRIED_CONFIG_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")


class WeightsSource:
    def __init__(self, weights: QwenWeights):
        self.weights = weights
        self.config = weights.config
        self.extra_config: dict = {}

    def _name(self, name: str) -> str:
        return EMBED if name == LM_HEAD and self.config.tie_word_embeddings else name

    def shape(self, name: str) -> tuple[int, ...]:
        return self.weights[self._name(name)].shape

    def dtype(self, name: str) -> str:
        """How the base stores the tensor (safetensors' name: "F32", "BF16", ...)."""
        return "F32"

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        return self.weights[self._name(name)][start:stop]


class CheckpointSource(WeightsSource):
    def __init__(self, directory: str | Path):
        src = Path(directory)
        self.config, body = read_config(src)
        text = body.get("text_config", {}) if body.get("model_type") != "qwen3_5_text" else {}
        text = text if isinstance(text, dict) else {}
        self.extra_config = {k: body.get(k, text.get(k)) for k in CARRIED_CONFIG_KEYS
                             if body.get(k, text.get(k)) is not None}
        files = checkpoint_files(src)
        wanted = expected_shapes(self.config)
        self.entries: dict[str, tuple[Path, dict, int]] = {}
        for path in files:
            header, data_start = read_safetensors_header(path)
            for name, entry in header.items():
                target = None if name == "__metadata__" else text_name(name)
                if target is None or (target == LM_HEAD and self.config.tie_word_embeddings):
                    continue
                if target not in wanted:
                    raise CheckpointError(f"{path.name}: unexpected tensor {name}")
                if tuple(entry["shape"]) != wanted[target]:
                    raise CheckpointError(f"{path.name}: {name} has shape {entry['shape']}, "
                                          f"the config needs {list(wanted[target])}")
                if entry["dtype"] not in _DTYPES:
                    raise CheckpointError(f"{path.name}: {name} has dtype {entry['dtype']}")
                self.entries[target] = (path, entry, data_start)
        missing = sorted(set(wanted) - set(self.entries))
        if missing:
            raise CheckpointError(f"{src}: missing weights {missing[:5]}"
                                  f"{' ...' if len(missing) > 5 else ''}")

    def shape(self, name: str) -> tuple[int, ...]:
        return tuple(self.entries[self._name(name)][1]["shape"])

    def dtype(self, name: str) -> str:
        return self.entries[self._name(name)][1]["dtype"]

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        path, entry, data_start = self.entries[self._name(name)]
        shape = entry["shape"]
        stop = min(stop, shape[0])
        row_items = int(np.prod(shape[1:], dtype=np.int64))
        dtype = np.dtype(_DTYPES[entry["dtype"]]).newbyteorder("<")
        first = entry["data_offsets"][0] + start * row_items * dtype.itemsize
        count = (stop - start) * row_items
        if count <= 0:
            return np.zeros((0, *shape[1:]), np.float32)
        values = np.memmap(path, dtype=dtype, mode="r", offset=data_start + first,
                           shape=(count,))
        if entry["dtype"] == "BF16":
            out = (values.astype(np.uint32) << 16).view(np.float32)
        else:
            out = values.astype(np.float32)
        del values
        return out.reshape(stop - start, *shape[1:])
