"""runtime.checkpoint_check: a merged or exported checkpoint's qgpu_merge.json checked
against its weights when it is loaded, so that a checkpoint whose layout file and tensors
disagree is refused by name instead of running launches that end in a misleading error
(an edited GPU token offset once ran 49 s into "block budget exceeded ... while (1)").

- `check_layout(directory, info)`: config.json and the tensors' shapes against the layout
  (GPU tokens inside the vocabulary, the embedding's rows and width, circuit plus base
  layers = the config's layers, the hidden size and the circuit's width within it, the
  memory table inside the circuit's layers) and, for a merge, the GPU token offset
  against the embedding itself: the row at the offset is a GPU token's (its ballast dims
  hold the layout's ballast) and the row before it a text token's (zero there). Reads
  config.json, the safetensors headers and two embedding rows: milliseconds.
- `check_checksums(directory, info)`: the CRC-32 of what a launch reads (merge.merge.
  circuit_rows: the circuit layers, the final norm, the GPU rows of the embedding and
  head) against the values `qgpu merge` stored in qgpu_merge.json: a tensor changed after
  the merge is named. Run when the launch part is read from the checkpoint (no stored
  launch plan, or one built from files since changed: runtime.checkpoint's fingerprint
  includes the files' change times, which an in-place edit moves even when it restores
  the modification time).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from qgpu.errors import QgpuError
from qgpu.files import crc32_of
from qgpu.merge.merge import CHECKSUMS, LAYOUT_FILE
from qgpu.model.weights import EMBED


class CheckpointLayoutError(QgpuError):
    """qgpu_merge.json does not describe the weights beside it."""


def _headers(directory: Path) -> dict[str, tuple[Path, dict, int]]:
    """Text-model tensor name -> (file, header entry, data offset), headers only."""
    from qgpu.model.checkpoint import checkpoint_files, read_safetensors_header, text_name

    found = {}
    for path in checkpoint_files(directory):
        header, data_start = read_safetensors_header(path)
        for name, entry in header.items():
            target = None if name == "__metadata__" else text_name(name)
            if target is not None:
                found[target] = (path, entry, data_start)
    return found


def _rows(where: tuple[Path, dict, int], start: int, stop: int) -> np.ndarray:
    from qgpu.model.checkpoint import read_rows

    return np.asarray(read_rows(*where, start, stop), np.float32)


def check_layout(directory: str | Path, info: dict) -> None:
    from qgpu.model.checkpoint import read_config

    directory = Path(directory)
    config = read_config(directory)[0]
    layout = directory / LAYOUT_FILE

    def refuse(what: str) -> None:
        raise CheckpointLayoutError(f"{layout} does not match the weights beside it: {what}"
                                    "; merge (or export) the checkpoint again")

    offset, tokens = int(info["gpu_token_offset"]), int(info["gpu_tokens"])
    vocab, layers = config.vocab_size, config.num_hidden_layers
    if offset + tokens > vocab:
        refuse(f"GPU tokens {offset}..{offset + tokens - 1} pass the model's vocabulary of "
               f"{vocab} (config.json)")
    if info.get("vocab_size", vocab) != vocab:
        refuse(f"vocab_size {info['vocab_size']}, config.json {vocab}")
    circuit_layers = info.get("circuit_layers", layers)
    if circuit_layers + info.get("base_layers", 0) != layers:
        refuse(f"{circuit_layers} circuit + {info.get('base_layers', 0)} base layers, "
               f"config.json has {layers}")
    if info.get("hidden", config.hidden_size) != config.hidden_size:
        refuse(f"hidden {info['hidden']}, config.json {config.hidden_size}")
    if info.get("circuit_hidden", 0) > info.get("shared_dims", config.hidden_size):
        refuse(f"the circuit's {info['circuit_hidden']} dims do not fit the "
               f"{info.get('shared_dims')} shared dims")
    memory = (info.get("circuit_info") or {}).get("memory") or {}
    if memory.get("layer", 0) >= circuit_layers:
        refuse(f"the memory table's layer {memory['layer']} is not one of the "
               f"{circuit_layers} circuit layers")
    tensors = _headers(directory)
    if EMBED not in tensors:
        refuse(f"no {EMBED}")
    embed = tensors[EMBED]
    if list(embed[1]["shape"]) != [vocab, config.hidden_size]:
        refuse(f"{EMBED} has shape {embed[1]['shape']}, the layout needs "
               f"[{vocab}, {config.hidden_size}]")
    dims, ballast = info.get("ballast_dims"), info.get("ballast")
    if info.get("layout") == "shared" and dims and ballast and offset > 0:
        rows = _rows(embed, offset - 1, offset + 1)[:, dims]
        if rows[0].any() or not np.allclose(rows[1], np.float32(ballast), rtol=1e-6):
            refuse(f"gpu_token_offset {offset} is not where the GPU tokens start in "
                   f"{EMBED} (row {offset - 1} must be a text token's, row {offset} the "
                   "first GPU token's)")


def check_checksums(directory: str | Path, info: dict) -> None:
    """CheckpointLayoutError naming the first tensor whose bytes differ from the CRC-32
    `qgpu merge` stored (checkpoints merged before CHECKSUMS existed: nothing checked)."""
    from qgpu.merge.writer import ITEM_BYTES

    sums = info.get(CHECKSUMS)
    if not isinstance(sums, dict):
        return
    directory = Path(directory)
    tensors = _headers(directory)

    def differs(key: str) -> str | None:
        name, _, rows = key.partition("[")
        start, stop = (int(v) for v in rows.rstrip("]").split(":"))
        if name not in tensors:
            return f"{directory}: {name} is missing (qgpu merge wrote it)"
        path, entry, data_start = tensors[name]
        row = ITEM_BYTES.get(entry["dtype"], 4) * int(np.prod(entry["shape"][1:],
                                                               dtype=np.int64))
        first = data_start + entry["data_offsets"][0]
        if crc32_of(path, first + start * row, first + stop * row) != sums[key]:
            return (f"{path}: {key} is not what qgpu merge wrote (its CRC-32 differs from "
                    f"the one in {LAYOUT_FILE}): the checkpoint was changed after the merge")
        return None

    # zlib releases the GIL: ~10 GB of a machine merge's circuit layers in a few seconds
    with ThreadPoolExecutor(min(8, os.cpu_count() or 1)) as pool:
        problem = next((p for p in pool.map(differs, sums) if p), None)
    if problem:
        raise CheckpointLayoutError(f"{problem}; merge the checkpoint again")
