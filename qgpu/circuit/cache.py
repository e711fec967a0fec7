"""circuit.cache: compiled weights on disk, keyed by what they were compiled from.

The key hashes the circuit's canonical description (`Circuit.describe()`: every token
input's values, every table, unit and output rule), the layer shape, the compile options
and the source of the compiler itself (qgpu/circuit/*.py), so a change to any of them
compiles afresh. Entries hold the nonzero entries of every tensor (compiled weights are
nearly all zeros) and the thresholds for the margin report.

Where: $QGPU_CACHE_DIR, else $XDG_CACHE_HOME/qgpu, else .cache/qgpu in the checkout.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from qgpu.circuit.primitives import Threshold
from qgpu.model.config import QwenConfig
from qgpu.model.weights import QwenWeights, expected_shapes

_SOURCES = Path(__file__).resolve().parent
_CHECKOUT = _SOURCES.parent.parent


def cache_dir() -> Path:
    if os.environ.get("QGPU_CACHE_DIR"):
        return Path(os.environ["QGPU_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "qgpu"
    return _CHECKOUT / ".cache" / "qgpu"


def _compiler_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(_SOURCES.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def cache_key(description: dict, shape: dict, options: dict) -> str:
    body = json.dumps({"circuit": description, "shape": shape, "options": options,
                       "compiler": _compiler_digest()}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:32]


def save(key: str, weights: QwenWeights, thresholds: list[Threshold],
         directory: Path | None = None) -> Path:
    directory = directory or cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for i, (_, tensor) in enumerate(sorted(weights.tensors.items())):
        flat = tensor.reshape(-1)
        where = np.flatnonzero(flat)
        arrays[f"i{i}"], arrays[f"v{i}"] = where.astype(np.int64), flat[where]
    meta = {"config": weights.config.to_hf_dict(), "names": sorted(weights.tensors),
            "thresholds": [[t.layer, t.unit, sorted(t.form.items()), t.threshold, t.gain,
                            t.offset, t.name] for t in thresholds]}
    path = directory / f"{key}.npz"
    tmp = directory / f"{key}.{os.getpid()}.tmp.npz"
    np.savez(tmp, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **arrays)
    os.replace(tmp, path)  # atomic: a concurrent reader sees all or nothing
    return path


def load(key: str, directory: Path | None = None):
    """(weights, thresholds), or None when there is no entry."""
    path = (directory or cache_dir()) / f"{key}.npz"
    if not path.exists():
        return None
    with np.load(path) as data:
        meta = json.loads(data["meta"].tobytes())
        config = QwenConfig.from_hf_dict(meta["config"])
        shapes = expected_shapes(config)
        tensors = {}
        for i, name in enumerate(meta["names"]):
            t = np.zeros(int(np.prod(shapes[name])), np.float32)
            t[data[f"i{i}"]] = data[f"v{i}"]
            tensors[name] = t.reshape(shapes[name])
    thresholds = [Threshold(layer, unit, {int(d): c for d, c in form}, th, gain, off, name)
                  for layer, unit, form, th, gain, off, name in meta["thresholds"]]
    return QwenWeights(config, tensors), thresholds
