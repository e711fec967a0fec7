"""merge.merge: the two entry points.

    merged, layout = merge_weights(base_weights, part)            # in memory
    layout = merge_checkpoint(base_dir, part, out_dir)            # directory to directory

`part` is a `merge.layout.CircuitPart` (`circuit_part(compiled, names)`). The directory
merge streams: each merged tensor is computed and written in row blocks from memory-mapped
rows of the base, so it never holds a copy of the base or of the merged model; memory is
the compiled circuit plus one block (merge.size estimates both for a 2B merge). The output
is a text-only `Qwen3_5ForCausalLM` checkpoint, each tensor in float32 or, where all its
values are bfloat16 numbers (a bf16 release's weights, many circuit matrices), in bf16:
transformers and qgpu widen it to the same float32 values on load (the circuit is exact
only in float32 arithmetic). A release's vision tower and multi-token-prediction weights
are not carried over (both read the base's hidden size). Also written: the tokenizer with
the GPU tokens and the pad (merge.tokenizer), the base's generation/chat-template files, and
`qgpu_merge.json` (the layout a runtime needs: GPU token offset, pad, circuit layers and
dims).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np

from qgpu.files import is_empty_folder
from qgpu.merge.layout import CircuitPart, MergeError, MergeLayout, make_layout
from qgpu.merge.source import CheckpointSource, WeightsSource
from qgpu.merge.tensors import MergedTensors
from qgpu.merge.tokenizer import add_gpu_tokens
from qgpu.merge.writer import BLOCK_BYTES, DEFAULT_SHARD_BYTES, write_checkpoint_tensors
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import (
    EMBED,
    FINAL_NORM,
    LM_HEAD,
    SPARSE_MAX_FILL,
    QwenWeights,
    expected_shapes,
    sparse_shape,
)

LAYOUT_FILE = "qgpu_merge.json"
CHECKSUMS = "weights_crc32"  # qgpu_merge.json's {"tensor[start:stop]": CRC-32 of its bytes}
PAD_NAME = "qgpu.pad"  # the pad token's name in the tokenizer: <|gpu:qgpu.pad|>
COPIED_FILES = ("generation_config.json", "chat_template.jinja", "chat_template.json",
                "special_tokens_map.json")


def _tensors(source, part: CircuitPart, **options) -> tuple[MergedTensors, MergeLayout]:
    layout = make_layout(source.config, part, **options)
    return MergedTensors(layout, source, part.weights, part.norm_weight), layout


def merge_weights(base: QwenWeights, part: CircuitPart, **options
                  ) -> tuple[QwenWeights, MergeLayout]:
    """The merged model in memory (options: norm_mode, neutralise; see MergeLayout)."""
    tensors, layout = _tensors(WeightsSource(base), part, **options)
    config = layout.merged_config()
    merged = {name: _stored(tensors, name, shape)
              for name, shape in expected_shapes(config).items()}
    return QwenWeights(config, merged), layout


def _stored(tensors: MergedTensors, name: str, shape: tuple[int, ...]):
    """One merged tensor in the form QwenWeights keeps it, built in row blocks: a large
    mostly-zero matrix (circuit layers, a wide embedding or head) never exists densely."""
    if not sparse_shape(shape):
        return tensors.rows(name, 0, shape[0])
    fast = tensors.sparse(name, shape)
    if fast is not None:
        return fast
    width = shape[1]
    limit = SPARSE_MAX_FILL * shape[0] * width
    step = max(1, (BLOCK_BYTES // 4) // width)
    flat, values, nonzeros = [], [], 0
    for start in range(0, shape[0], step):
        block = tensors.rows(name, start, min(start + step, shape[0]))
        where = np.flatnonzero(block.view(np.uint32))  # every entry that is not +0.0
        nonzeros += where.size
        if nonzeros > limit:  # dense after all (a base's matrix)
            return tensors.rows(name, 0, shape[0])
        flat.append(where + start * width)
        values.append(block.reshape(-1)[where])
    return SparseTensor.from_flat(shape, np.concatenate(flat), np.concatenate(values))


def circuit_rows(shapes: dict, layout: MergeLayout) -> dict[str, tuple[int, int]]:
    """What a launch reads of the merged checkpoint, checksummed at merge time (stored in
    qgpu_merge.json as CHECKSUMS, checked by the runtime when it reads them): the circuit
    layers' tensors and the final norm whole, the GPU tokens' rows of the embedding and
    the head."""
    first, stop = layout.gpu_token_offset, layout.pad_token
    rows = {name: (0, shape[0]) for name, shape in shapes.items()
            if name == FINAL_NORM or (name.startswith("model.layers.")
                                      and int(name.split(".")[2]) < layout.circuit_layers)}
    rows.update({name: (first, stop) for name in (EMBED, LM_HEAD) if name in shapes})
    return rows


def merge_checkpoint(base_dir: str | Path, part: CircuitPart, out_dir: str | Path, *,
                     shard_bytes: int = DEFAULT_SHARD_BYTES, block_bytes: int = BLOCK_BYTES,
                     progress: bool = False, **options) -> MergeLayout:
    base_dir, out = Path(base_dir), Path(out_dir)
    if out.resolve() == base_dir.resolve():
        raise MergeError("the output directory must differ from the base's")
    if out.exists() and not is_empty_folder(out):
        raise MergeError(f"{out} exists and is not empty")
    source = CheckpointSource(base_dir)
    tensors, layout = _tensors(source, part, **options)
    config = layout.merged_config()
    if progress:
        print(f"qgpu merge: base hidden {layout.base_hidden}, {source.config.num_hidden_layers}"
              f" layers, vocab {layout.gpu_token_offset}; circuit {part.name}: hidden "
              f"{layout.circuit_hidden}, {layout.circuit_layers} layers, {part.vocab_size} "
              f"tokens -> hidden {layout.hidden}, {config.num_hidden_layers} layers, vocab "
              f"{layout.vocab_size}", file=sys.stderr, flush=True)
    out.mkdir(parents=True, exist_ok=True)
    body = config.to_hf_dict()
    body.update(source.extra_config)
    (out / "config.json").write_text(json.dumps(body, indent=2) + "\n")
    shapes = expected_shapes(config)
    crcs: dict[str, int] = {}
    write_checkpoint_tensors(out, shapes, tensors.rows, shard_bytes=shard_bytes,
                             block_bytes=block_bytes, progress=progress,
                             dtypes={name: tensors.dtype(name) for name in shapes},
                             checksums=circuit_rows(shapes, layout), crcs=crcs)
    for name in COPIED_FILES:
        if (base_dir / name).is_file():
            shutil.copyfile(base_dir / name, out / name)
    names = part.token_names or [f"{part.name}:{t}" for t in range(part.vocab_size)]
    names = [*names, PAD_NAME]
    has_tokenizer = add_gpu_tokens(base_dir, out, layout.gpu_token_offset, names)
    info = {"circuit": part.name, **layout.describe(), "tokenizer": has_tokenizer,
            "circuit_info": part.info, CHECKSUMS: crcs}
    (out / LAYOUT_FILE).write_text(json.dumps(info, indent=1) + "\n")
    if progress:
        print(f"qgpu merge: wrote {out}" + ("" if has_tokenizer else " (no tokenizer in the "
                                             "base directory)"), file=sys.stderr, flush=True)
    return layout
