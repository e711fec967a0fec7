"""circuit.cache: compiled weights on disk, keyed by what they were compiled from.

The key hashes the circuit's canonical description (`Circuit.describe()`: every token
input's values, every table, unit and output rule), the layer shape, the compile options
and the source of the compiler itself (qgpu/circuit/*.py and the weight primitives it
writes with, qgpu/primitives/*.py), so a change to any of them
compiles afresh. Entries hold the nonzero entries of every tensor (compiled weights are
nearly all zeros: flat positions ascending and values, taken from a sparse tensor's own
entries without densifying it) and the thresholds for the margin report; a load builds
the large matrices straight back as sparse tensors.

An entry is an .npz whose zip comment ends in a CRC-32 of every byte before it: a load
checks it first, and an entry that is short, changed or not a zip is named on stderr,
deleted and compiled again (never read into weights). Entries are written under a
temporary name in the same folder and renamed (qgpu.files.atomic_write); temporaries of
killed writers are deleted when the next entry is written. `folder_problem` says, before
a compile starts, whether the folder can take an entry.

Where: $QGPU_CACHE_DIR, else $XDG_CACHE_HOME/qgpu, else .cache/qgpu in the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
from pathlib import Path

import numpy as np

from qgpu.files import atomic_write, clean_leftovers, crc32_of, folder_problem
from qgpu.model.config import QwenConfig
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import QwenWeights, expected_shapes, sparse_shape
from qgpu.primitives import Threshold
from qgpu.progress import progress as progress_bar

_SOURCES = Path(__file__).resolve().parent
_PRIMITIVES = _SOURCES.parent / "primitives"
_CHECKOUT = _SOURCES.parent.parent
CHECK_TAG = b"qgpu-crc32:"  # the zip comment: this, then the CRC-32 as 8 hex digits
ENTRY_BYTES = 300 * 2**20  # room asked for before a compile (the default machine: ~210 MB)


def cache_dir() -> Path:
    if os.environ.get("QGPU_CACHE_DIR"):
        return Path(os.environ["QGPU_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "qgpu"
    return _CHECKOUT / ".cache" / "qgpu"


def _compiler_digest() -> str:
    """The compiler's sources: qgpu/circuit/*.py and the primitives it emits with
    (qgpu/primitives/*.py: their constants are in the weights, e.g. gdn_memory.KEY)."""
    h = hashlib.sha256()
    for path in sorted([*_SOURCES.glob("*.py"), *_PRIMITIVES.glob("*.py")]):
        h.update(str(path.relative_to(_SOURCES.parent)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


# Taken when the compiler is imported, not when a key is asked for: a source edited while
# a process runs must not label weights emitted by the code that process loaded before.
_COMPILER_DIGEST = _compiler_digest()


def cache_key(description: dict, shape: dict, options: dict) -> str:
    body = json.dumps({"circuit": description, "shape": shape, "options": options,
                       "compiler": _COMPILER_DIGEST}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def save(key: str, weights: QwenWeights, thresholds: list[Threshold],
         directory: Path | None = None) -> Path:
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for i, name in enumerate(sorted(weights.tensors)):
        arrays[f"i{i}"], arrays[f"v{i}"] = _nonzero_entries(weights, name)
    meta = {"config": weights.config.to_hf_dict(), "names": sorted(weights.tensors),
            "thresholds": [[t.layer, t.unit, sorted(t.form.items()), t.threshold, t.gain,
                            t.offset, t.name] for t in thresholds]}
    path = directory / f"{key}.npz"
    clean_leftovers(directory)
    with atomic_write(path) as tmp:
        with open(tmp, "wb") as f:  # a file object: numpy adds no ".npz" to the name
            np.savez(f, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
        with zipfile.ZipFile(tmp, "a") as z:
            z.comment = CHECK_TAG + b"0" * 8
        crc = crc32_of(tmp, 0, -8)
        with open(tmp, "r+b") as f:
            f.seek(-8, os.SEEK_END)
            f.write(f"{crc:08x}".encode())
    return path


def entry_problem(path: Path) -> str | None:
    """Why the entry at `path` is not the file `save` wrote, or None."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        if size < len(CHECK_TAG) + 8:
            return "too short"
        f.seek(size - len(CHECK_TAG) - 8)
        tail = f.read()
    if not tail.startswith(CHECK_TAG):
        return "no checksum (not an entry this version wrote, or cut short)"
    try:
        stored = int(tail[len(CHECK_TAG):], 16)
    except ValueError:
        return "a malformed checksum"
    return None if crc32_of(path, 0, -8) == stored else "checksum mismatch"


def problem_before_compile(directory: Path | None = None) -> str | None:
    """Why an entry could not be saved in the cache folder (checked before compiling)."""
    return folder_problem(directory or cache_dir(), ENTRY_BYTES)


def _nonzero_entries(weights: QwenWeights, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(flat positions ascending, values) of a tensor's nonzero entries."""
    tensor = weights[name]
    if isinstance(tensor, SparseTensor):
        csr = weights.csr(name)
        return csr.row_ids() * tensor.shape[1] + csr.cols, csr.vals
    flat = tensor.reshape(-1)
    where = np.flatnonzero(flat)
    return where.astype(np.int64), flat[where]


def _tensor(shape: tuple[int, ...], where: np.ndarray, values: np.ndarray):
    if sparse_shape(shape):
        return SparseTensor.from_flat(shape, where, values)
    t = np.zeros(int(np.prod(shape)), np.float32)
    t[where] = values
    return t.reshape(shape)


def load(key: str, directory: Path | None = None, progress: bool = False):
    """(weights, thresholds), or None when there is no entry. progress: a bar over the
    tensors (on a terminal)."""
    path = (directory or cache_dir()) / f"{key}.npz"
    if not path.is_file():
        return None
    try:
        problem = entry_problem(path)
        if problem is None:
            return _read(path, progress)
    except Exception as err:  # noqa: BLE001 - whatever a damaged entry raises: rebuilt
        problem = f"unreadable ({type(err).__name__}: {err})"
    print(f"qgpu: compile cache entry {path}: {problem}: deleted, compiling again",
          file=sys.stderr, flush=True)
    path.unlink(missing_ok=True)
    return None


def _read(path: Path, progress: bool):
    with np.load(path) as data:
        meta = json.loads(data["meta"].tobytes())
        config = QwenConfig.from_hf_dict(meta["config"])
        shapes = expected_shapes(config)
        tensors = {}
        for i, name in enumerate(progress_bar(meta["names"], desc="qgpu load (cache)",
                                              unit="tensor", enabled=progress)):
            tensors[name] = _tensor(shapes[name], data[f"i{i}"], data[f"v{i}"])
    thresholds = [Threshold(layer, unit, {int(d): c for d, c in form}, th, gain, off, name)
                  for layer, unit, form, th, gain, off, name in meta["thresholds"]]
    return QwenWeights(config, tensors), thresholds
