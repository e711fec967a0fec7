"""model.plan_file: a native plan's fields (`fast_plan.PlanBuilder.fields`) in one file,
read back memory-mapped: loading is opening the file and checking its checksum, the
arrays are views of the mapping (shared by every process that maps the file).

Layout: the 8 bytes `QGPUPLN2`, a little-endian uint64 CRC-32 of everything after it
(from byte 16 on: the header's length, the header and every array), the uint64 header
length, the header (JSON: {"meta": ..., "numbers": {path: value}, "arrays": {path:
[dtype, shape, offset]}}), then each array's bytes at its offset (64-byte aligned).
A file whose checksum, magic, length or header is not right is a StoredFileError naming
it, never run: a flipped bit in an index array would send the kernel out of its arrays.
Written to a temporary name beside it and renamed (qgpu.files.atomic_write): a reader
sees the whole file or none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from qgpu.files import StoredFileError, atomic_write, crc32_of

MAGIC = b"QGPUPLN2"
PREFIX = len(MAGIC) + 16  # magic, checksum, header length
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
    start = -(-(PREFIX + len(header)) // ALIGN) * ALIGN
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(MAGIC + bytes(8) + len(header).to_bytes(8, "little") + header)
            for name, a in arrays.items():
                f.seek(start + index[name][2])
                f.write(a.tobytes())
            f.truncate(start + offset)
        crc = crc32_of(tmp, len(MAGIC) + 8)
        with open(tmp, "r+b") as f:
            f.seek(len(MAGIC))
            f.write(crc.to_bytes(8, "little"))
    return path


def _header(path: Path) -> tuple[dict, int]:
    """The checked header and the arrays' start; StoredFileError for anything wrong."""
    with open(path, "rb") as f:
        head = f.read(PREFIX)
        size = os.fstat(f.fileno()).st_size
        if len(head) < PREFIX or head[:len(MAGIC)] != MAGIC:
            raise StoredFileError(f"{path} is not a qgpu plan file (or not this version's)")
        stored = int.from_bytes(head[len(MAGIC):len(MAGIC) + 8], "little")
        if crc32_of(path, len(MAGIC) + 8) != stored:
            raise StoredFileError(f"{path}: checksum mismatch (the file was changed or cut "
                                  "after it was written)")
        n = int.from_bytes(head[len(MAGIC) + 8:], "little")
        if n > size - PREFIX:
            raise StoredFileError(f"{path} is a truncated qgpu plan file")
        try:
            header = json.loads(f.read(n))
        except (ValueError, UnicodeDecodeError) as err:
            raise StoredFileError(f"{path}: unreadable plan header ({err})") from err
    start = -(-(PREFIX + n) // ALIGN) * ALIGN
    for name, (dtype, shape, offset) in header["arrays"].items():
        end = start + offset + int(np.prod(shape)) * np.dtype(dtype).itemsize
        if offset < 0 or end > size:
            raise StoredFileError(f"{path}: array {name} lies outside the file")
    return header, start


def load_plan(path: Path) -> tuple[dict, dict]:
    """(fields, meta) with every array a read-only view of the file's mapping; a
    StoredFileError (naming the file) when it is not the file save_plan wrote."""
    try:
        header, start = _header(path)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        if isinstance(err, StoredFileError):
            raise
        raise StoredFileError(f"{path}: malformed plan header ({err})") from err
    fields: dict = dict(header["numbers"])
    data = np.memmap(path, np.uint8, mode="r") if header["arrays"] else None
    for name, (dtype, shape, offset) in header["arrays"].items():
        count = int(np.prod(shape))
        fields[name] = np.frombuffer(data, np.dtype(dtype), count, start + offset).reshape(
            shape) if count else np.zeros(shape, np.dtype(dtype))
    return fields, header["meta"]
