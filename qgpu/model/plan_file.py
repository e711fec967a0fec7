"""model.plan_file: a native plan's fields (`fast_plan.PlanBuilder.fields`) in one file,
read back memory-mapped: loading is opening the file, the arrays are views of the
mapping (pages are read when the kernel first touches them, and are shared by every
process that maps the file).

Layout: the 8 bytes `QGPUPLN1`, a little-endian uint64 header length, the header (JSON:
{"meta": ..., "numbers": {path: value}, "arrays": {path: [dtype, shape, offset]}}),
then each array's bytes at its offset (64-byte aligned). Written to a temporary file and
renamed: a reader sees the whole file or none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

MAGIC = b"QGPUPLN1"
ALIGN = 64


def save_plan(path: Path, fields: dict, meta: dict) -> Path:
    numbers = {k: v for k, v in fields.items() if not isinstance(v, np.ndarray)}
    arrays = {k: np.ascontiguousarray(v) for k, v in fields.items()
              if isinstance(v, np.ndarray)}
    index, offset = {}, 0
    for name, a in arrays.items():
        index[name] = [a.dtype.str, list(a.shape), offset]
        offset += -(-a.nbytes // ALIGN) * ALIGN
    header = json.dumps({"meta": meta, "numbers": numbers, "arrays": index}).encode()
    start = -(-(len(MAGIC) + 8 + len(header)) // ALIGN) * ALIGN
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(MAGIC + len(header).to_bytes(8, "little") + header)
        for name, a in arrays.items():
            f.seek(start + index[name][2])
            f.write(a.tobytes())
        f.truncate(start + offset)
    os.replace(tmp, path)
    return path


def load_plan(path: Path) -> tuple[dict, dict]:
    """(fields, meta) with every array a read-only view of the file's mapping."""
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + 8)
        if len(head) < len(MAGIC) + 8 or head[:len(MAGIC)] != MAGIC:
            raise ValueError(f"{path} is not a qgpu plan file")
        n = int.from_bytes(head[len(MAGIC):], "little")
        if n > os.fstat(f.fileno()).st_size - len(head):
            raise ValueError(f"{path} is a truncated qgpu plan file")
        header = json.loads(f.read(n))
    start = -(-(len(MAGIC) + 8 + n) // ALIGN) * ALIGN
    fields: dict = dict(header["numbers"])
    data = np.memmap(path, np.uint8, mode="r") if header["arrays"] else None
    for name, (dtype, shape, offset) in header["arrays"].items():
        count = int(np.prod(shape))
        fields[name] = np.frombuffer(data, np.dtype(dtype), count, start + offset).reshape(
            shape) if count else np.zeros(shape, np.dtype(dtype))
    return fields, header["meta"]
