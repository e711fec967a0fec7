"""merge.writer: a safetensors checkpoint written tensor by tensor, block by block.

The names and shapes are known before any data is computed, so every shard's header
(byte offsets included) is written first and the data streamed after it: memory holds one
block of rows at a time (`block_rows` keeps a block under BLOCK_BYTES), never a whole
tensor. Shards are cut at `shard_bytes`; with more than one, `model.safetensors.index.json`
maps each tensor to its file, as Hugging Face checkpoints do. Each tensor is stored as
F32 or, where `dtypes` says so, BF16: a BF16 tensor's values must be bfloat16 numbers
(the writer checks every block: a value that would round is an error, never a silent
loss), so widening it on load gives back the float32 values bit for bit.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from qgpu.model.checkpoint import INDEX_FILE, WEIGHTS_FILE
from qgpu.progress import progress as progress_bar

BLOCK_BYTES = 32 << 20
DEFAULT_SHARD_BYTES = 4 << 30


ITEM_BYTES = {"F32": 4, "BF16": 2}


def to_bf16(block: np.ndarray, name: str) -> np.ndarray:
    """float32 values that are bfloat16 numbers, as their upper 16 bits."""
    bits = np.ascontiguousarray(block, "<f4").view("<u4")
    if (bits & 0xFFFF).any():
        raise ValueError(f"{name}: a value is not a bfloat16 number (stored as BF16)")
    return (bits >> 16).astype("<u2")


def is_bf16(values: np.ndarray) -> bool:
    """True when every float32 value is a bfloat16 number (stored in BF16 exactly)."""
    return not (np.ascontiguousarray(values, "<f4").view("<u4") & 0xFFFF).any()


def tensor_bytes(shape: tuple[int, ...], dtype: str = "F32") -> int:
    return ITEM_BYTES[dtype] * int(np.prod(shape, dtype=np.int64))


def block_rows(shape: tuple[int, ...], block_bytes: int = BLOCK_BYTES) -> int:
    row_bytes = 4 * int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 4
    return max(1, block_bytes // max(row_bytes, 1))


def plan_shards(shapes: dict[str, tuple[int, ...]], shard_bytes: int,
                dtypes: dict[str, str] | None = None) -> list[list[str]]:
    shards: list[list[str]] = [[]]
    size = 0
    for name, shape in shapes.items():
        nbytes = tensor_bytes(shape, (dtypes or {}).get(name, "F32"))
        if shards[-1] and size + nbytes > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += nbytes
    return shards


def checksum_key(name: str, start: int, stop: int) -> str:
    """How a tensor's checksummed rows are named: the tensor, or `name[start:stop]`."""
    return f"{name}[{start}:{stop}]"


def shard_file(index: int, count: int) -> str:
    return WEIGHTS_FILE if count == 1 else f"model-{index + 1:05d}-of-{count:05d}.safetensors"


def write_checkpoint_tensors(directory: Path, shapes: dict[str, tuple[int, ...]],
                             rows: Callable[[str, int, int], np.ndarray], *,
                             shard_bytes: int = DEFAULT_SHARD_BYTES,
                             block_bytes: int = BLOCK_BYTES, progress: bool = False,
                             dtypes: dict[str, str] | None = None,
                             checksums: dict[str, tuple[int, int]] | None = None,
                             crcs: dict[str, int] | None = None) -> list[str]:
    """Write every tensor of `shapes` (name -> shape), its data from rows(name, a, b)
    (float32), stored as dtypes[name] ("F32" by default, or "BF16"). Returns the shard
    file names. checksums[name] = (start, stop): crcs[checksum_key(name, start, stop)]
    gets the CRC-32 of those rows' stored bytes (computed as they are written)."""
    dtypes = dtypes or {}
    checksums = checksums or {}
    shards = plan_shards(shapes, shard_bytes, dtypes)
    files = [shard_file(i, len(shards)) for i in range(len(shards))]
    total = sum(tensor_bytes(s, dtypes.get(n, "F32")) for n, s in shapes.items())
    bar = progress_bar(total=total, desc="qgpu merge: writing", unit="B", unit_scale=True,
                       unit_divisor=1024, enabled=progress, leave=True)
    for file, names in zip(files, shards, strict=True):
        header: dict = {"__metadata__": {"format": "pt"}}
        offset = 0
        for name in names:
            nbytes = tensor_bytes(shapes[name], dtypes.get(name, "F32"))
            header[name] = {"dtype": dtypes.get(name, "F32"), "shape": list(shapes[name]),
                            "data_offsets": [offset, offset + nbytes]}
            offset += nbytes
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)
        with open(directory / file, "wb") as f:
            f.write(struct.pack("<Q", len(blob)))
            f.write(blob)
            for name in names:
                shape = shapes[name]
                step = block_rows(shape, block_bytes)
                for a in range(0, shape[0], step):
                    b = min(shape[0], a + step)
                    block = np.ascontiguousarray(rows(name, a, b), dtype="<f4")
                    if block.shape != (b - a, *shape[1:]):
                        raise ValueError(f"{name} rows {a}:{b} came back as {block.shape}")
                    if dtypes.get(name) == "BF16":
                        block = to_bf16(block, name)
                    data = block.tobytes()
                    if name in checksums and crcs is not None:
                        first, last = checksums[name]
                        lo, hi = max(a, first), min(b, last)
                        key = checksum_key(name, first, last)
                        row = len(data) // (b - a)
                        crcs[key] = zlib.crc32(data[(lo - a) * row:(hi - a) * row] if lo < hi
                                               else b"", crcs.get(key, 0))
                    f.write(data)
                    bar.update(block.nbytes)
                bar.set_postfix_str(f"{file}: {name}", refresh=False)
    bar.close()
    if len(files) > 1:
        weight_map = {name: file for file, names in zip(files, shards, strict=True)
                      for name in names}
        (directory / INDEX_FILE).write_text(json.dumps(
            {"metadata": {"total_size": total}, "weight_map": weight_map}, indent=1) + "\n")
    return files
