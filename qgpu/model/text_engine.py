"""model.text_engine: `TextEngine`, the text half of a merged checkpoint (or a base alone)
in the memory the base itself needs.

What it holds, for a checkpoint directory:
- the base's layers only: a merged model's circuit layers are skipped, which is exact for
  text tokens (every circuit gate reads the text flag with -2^64: a text token leaves
  them bit for bit as it came and never touches their states; docs/merge.md);
- every bfloat16 matrix as a `Bf16Matrix` over the memory-mapped file (never widened as a
  whole: the pages are the file's, shared with the page cache), float32 matrices
  memory-mapped as they are;
- the embedding's and the head's text rows only (ids below the GPU token offset: a GPU or
  pad row scores below -1e12 at a text position, so it is never the argmax); a float32
  head whose text rows are all bfloat16 numbers (a merged head: the base's rows, the flag
  column -2^20) is narrowed to bfloat16 once, exactly; the embedding is read row by row.

It runs the reference engine's formulas (model.reference, float32 activations), the
products through `Bf16Matrix` (model.bf16). A merged checkpoint and its base give the
same text tokens in it: the merge's text scale is a power of two and its norm
compensation is exact in real arithmetic (docs/merge.md); only float32 rounding in the
norms differs (tested: the same greedy ids).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from qgpu.model.bf16 import Bf16Matrix, narrow_exact
from qgpu.model.checkpoint import (
    CheckpointError,
    checkpoint_files,
    read_config,
    read_safetensors_header,
    text_name,
)
from qgpu.model.config import LINEAR
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import EMBED, LM_HEAD, expected_shapes, layer_prefix

MERGE_INFO = "qgpu_merge.json"
HEAD_BLOCK_ROWS = 8192
WEIGHT_KINDS = ("bf16", "q8")


class TextWeights:
    """The tensors the text path reads (QwenWeights' reading interface, without its
    conversion to float32 on assignment)."""

    def __init__(self, config, tensors: dict):
        self.config, self.tensors = config, tensors
        self.head_name = LM_HEAD

    def __getitem__(self, name: str):
        return self.tensors[name]

    def layer_is_linear(self, index: int) -> bool:
        return self.config.layer_types[index] == LINEAR


class TextEngine(ReferenceEngine):
    """The reference engine's forward pass over `TextWeights` (text tokens only)."""

    def __init__(self, weights: TextWeights):
        super().__init__(weights)  # type: ignore[arg-type]

    def _tensor(self, name: str):
        return self.weights[name]

    def consume(self, state, tokens) -> None:
        """Feed a prompt without the head (248,320 rows of a release: a third of a
        token's work), the projections batched over the prompt, the delta rule token by
        token (the recurrent path: numpy's chunked form costs ~1.7 s a layer at the 2B
        shape, for the same values up to rounding)."""
        ids = self._check_tokens(tokens)
        if ids.size:
            self._final(state, ids, "recurrent")

    def prefill_last(self, state, tokens) -> np.ndarray:
        """The logits after a prompt: every token but the last consumed, the last one
        stepped (only its head row computed)."""
        ids = [int(t) for t in tokens]
        self.consume(state, ids[:-1])
        return self.step(state, ids[-1])

    @classmethod
    def from_directory(cls, directory: str | Path, weights: str = "bf16") -> TextEngine:
        return cls(text_weights(directory, weights))


def _mapped(path: Path, entry: dict, start: int) -> np.ndarray:
    """A tensor of a safetensors file as a read-only memmap in its stored dtype (bf16 as
    uint16 bits)."""
    dtype = {"BF16": np.uint16, "F32": np.float32}.get(entry["dtype"])
    if dtype is None:
        raise CheckpointError(f"{path}: tensor dtype {entry['dtype']} is not supported by "
                              f"the text engine (BF16 or F32)")
    a, b = entry["data_offsets"]
    shape = tuple(entry["shape"])
    if b == a:
        return np.zeros(shape, dtype)
    return np.memmap(path, dtype=np.dtype(dtype).newbyteorder("<"), mode="r",
                     offset=start + a, shape=shape)


def _float(values: np.ndarray, bf16: bool) -> np.ndarray:
    if bf16:
        return (np.asarray(values, np.uint16).astype(np.uint32) << 16).view(np.float32)
    return np.array(values, np.float32)


def _matrix(values: np.ndarray, bf16: bool):
    """A matrix in the smallest exact form: bf16 bits as a Bf16Matrix (a memmap stays
    one), float32 as it is."""
    if bf16:
        return Bf16Matrix(values)
    return values


def _narrow_rows(values: np.ndarray, rows: int):
    """The first `rows` rows of a float32 matrix as a Bf16Matrix when all are bfloat16
    numbers (checked block by block, never widened or copied whole), else a memmap view."""
    out = np.empty((rows, values.shape[1]), np.uint16)
    for a in range(0, rows, HEAD_BLOCK_ROWS):
        b = min(rows, a + HEAD_BLOCK_ROWS)
        bits = narrow_exact(values[a:b])
        if bits is None:
            return values[:rows]
        out[a:b] = bits
    return Bf16Matrix(out)


def text_weights(directory: str | Path, weights: str = "bf16") -> TextWeights:
    """The text half of a checkpoint directory (merged or a base; see the module
    docstring). weights="q8": every bf16 matrix but the embedding quantized to 8 bits
    (model.q8: not the base's bits)."""
    if weights not in WEIGHT_KINDS:
        raise CheckpointError(f"text weights {weights!r}: choose one of "
                              f"{', '.join(WEIGHT_KINDS)}")
    src = Path(directory)
    config, _ = read_config(src)
    info = {}
    if (src / MERGE_INFO).is_file():
        info = json.loads((src / MERGE_INFO).read_text())
    base_layers = int(info.get("base_layers", config.num_hidden_layers))
    skip = config.num_hidden_layers - base_layers
    vocab = int(info.get("gpu_token_offset") or config.vocab_size)
    text = replace(config, num_hidden_layers=base_layers,
                   layer_types=list(config.layer_types[skip:]), vocab_size=vocab,
                   tie_word_embeddings=False)
    wanted = expected_shapes(text)
    stored: dict[str, tuple[np.ndarray, bool]] = {}
    for path in checkpoint_files(src):
        header, start = read_safetensors_header(path)
        for name, entry in header.items():
            target = None if name == "__metadata__" else text_name(name)
            if target is None:
                continue
            if target.startswith("model.layers."):
                index = int(target.split(".")[2]) - skip
                if index < 0:
                    continue   # a circuit layer: text tokens pass it untouched
                target = layer_prefix(index) + target.split(".", 3)[3]
            stored[target] = (_mapped(path, entry, start), entry["dtype"] == "BF16")
    if config.tie_word_embeddings and EMBED in stored:
        stored[LM_HEAD] = stored[EMBED]
    tensors = {}
    for name, shape in wanted.items():
        if name not in stored:
            raise CheckpointError(f"{src}: missing weights {name}")
        values, bf16 = stored[name]
        if name in (EMBED, LM_HEAD):
            if values.shape[0] < vocab or values.shape[1:] != shape[1:]:
                raise CheckpointError(f"{src}: {name} has shape {list(values.shape)}, the "
                                      f"text path needs {vocab} rows of {shape[1]}")
            tensors[name] = Bf16Matrix(values[:vocab]) if bf16 else (
                values[:vocab] if name == EMBED else _narrow_rows(values, vocab))
        elif tuple(values.shape) != tuple(shape):
            raise CheckpointError(f"{src}: {name} has shape {list(values.shape)}, the "
                                  f"config needs {list(shape)}")
        elif len(shape) == 2:
            tensors[name] = _matrix(values, bf16)
        else:
            tensors[name] = _float(values, bf16)
    if weights == "q8":
        from qgpu.model.q8 import Q8Matrix

        for name, value in tensors.items():
            if name != EMBED and isinstance(value, Bf16Matrix):
                tensors[name] = Q8Matrix(value)
    return TextWeights(text, tensors)
