"""circuit.cache: compiled weights on disk, keyed by what they were compiled from.

The key hashes the circuit's canonical description (`Circuit.describe()`: every token
input's values, every table, unit and output rule), the layer shape, the compile options
and the source of the compiler itself (qgpu/circuit/*.py and the weight primitives it
writes with, qgpu/primitives/*.py), so a change to any of them
compiles afresh. Entries hold the nonzero entries of every tensor (compiled weights are
nearly all zeros: flat positions ascending and values, taken from a sparse tensor's own
entries without densifying it) and the thresholds for the margin report; a load builds
the large matrices straight back as sparse tensors.

Where: $QGPU_CACHE_DIR, else $XDG_CACHE_HOME/qgpu, else .cache/qgpu in the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from qgpu.model.config import QwenConfig
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import QwenWeights, expected_shapes, sparse_shape
from qgpu.primitives import Threshold
from qgpu.progress import progress as progress_bar

_SOURCES = Path(__file__).resolve().parent
_PRIMITIVES = _SOURCES.parent / "primitives"
_CHECKOUT = _SOURCES.parent.parent


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
    tmp = directory / f"{key}.{os.getpid()}.tmp.npz"
    np.savez(tmp, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    os.replace(tmp, path)  # atomic: a concurrent reader sees all or nothing
    return path


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
    if not path.exists():
        return None
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
