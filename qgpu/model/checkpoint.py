"""model.checkpoint: Hugging Face model directories <-> `QwenWeights`, without torch.

Writes a standard Qwen3.5 text checkpoint (`config.json` + `model.safetensors`, float32)
that `AutoModelForCausalLM.from_pretrained(dir)` loads as `Qwen3_5ForCausalLM` with no
custom code. Reads such directories back, and also real Qwen3.5 releases, whose text
model sits under `model.language_model.*` next to a vision tower (`model.visual.*`) and
multi-token-prediction weights (`mtp.*`), sharded, in bfloat16: only the text weights
are read (memory-mapped), converted to float32.

The safetensors format is small enough to read and write here directly: an 8-byte
little-endian header length, a JSON header (dtype, shape, byte offsets per tensor), then
the raw little-endian data. Tensors are written in row blocks of about WRITE_BLOCK_BYTES,
a sparse tensor densified one block at a time, so the model is never held dense; read
tensors are put in QwenWeights' form one by one (compiled matrices become sparse).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from qgpu.errors import QgpuError
from qgpu.model.config import QwenConfig
from qgpu.model.weights import LM_HEAD, QwenWeights, expected_shapes, stored_form

WEIGHTS_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16, "F64": np.float64,
           "I64": np.int64, "I32": np.int32}
WRITE_BLOCK_BYTES = 16 << 20
MAX_HEADER_BYTES = 100 << 20   # safetensors' own limit on the JSON header


class CheckpointError(QgpuError):
    """A model directory that is missing files or does not hold a Qwen3.5 text model."""


def save_checkpoint(weights: QwenWeights, directory: str | Path) -> Path:
    """Write `config.json` and `model.safetensors` (float32) into `directory`."""
    weights.validate()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(weights.config.to_hf_dict(), indent=2) + "\n")
    write_safetensors(out / WEIGHTS_FILE, weights.tensors)
    return out


def row_blocks(tensor, block_bytes: int = WRITE_BLOCK_BYTES):
    """A tensor (numpy array or SparseTensor) as dense float32 blocks of whole rows."""
    if tensor.ndim < 2:
        yield np.asarray(tensor, dtype=np.float32)
        return
    row_bytes = 4 * int(np.prod(tensor.shape[1:]))
    step = max(1, block_bytes // max(row_bytes, 1))
    for start in range(0, tensor.shape[0], step):
        yield np.asarray(tensor[start:start + step], dtype=np.float32)


def write_safetensors(path: Path, tensors: dict) -> None:
    """float32 safetensors of numpy arrays or SparseTensors, streamed in row blocks."""
    header: dict = {"__metadata__": {"format": "pt"}}
    offset = 0
    names = sorted(tensors)
    for name in names:
        size = tensors[name].size * 4
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)  # keep tensor data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for name in names:
            for block in row_blocks(tensors[name]):
                f.write(np.ascontiguousarray(block, dtype="<f4").data)


def read_json(path: Path, what: str = "") -> dict:
    """A JSON object from a checkpoint file (config.json, an index, qgpu_merge.json); a
    file that is not one is a CheckpointError naming it."""
    try:
        body = json.loads(Path(path).read_bytes())
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{path} is not valid JSON "
                              f"({' '.join(str(exc).split())[:100]})") from None
    if not isinstance(body, dict):
        raise CheckpointError(f"{path} holds a JSON {type(body).__name__}, not an object"
                              f"{' (' + what + ')' if what else ''}")
    return body


def read_config(directory: Path) -> tuple[QwenConfig, dict]:
    """(config, raw body) of a model directory's config.json, checked."""
    path = Path(directory) / "config.json"
    if not path.is_file():
        raise CheckpointError(f"{directory} has no config.json")
    body = read_json(path, "a transformers config")
    try:
        config = QwenConfig.from_hf_dict(body)
        for shape in expected_shapes(config).values():   # sizes that are counts
            if not all(isinstance(d, int) and d > 0 for d in shape):
                raise CheckpointError(f"it gives a tensor the shape {shape}")
        return config, body
    except QgpuError as exc:
        raise CheckpointError(f"{path}: {exc}") from None
    except (TypeError, ValueError, KeyError, AttributeError, ZeroDivisionError) as exc:
        raise CheckpointError(f"{path} is not a Qwen3.5 config ({type(exc).__name__}: "
                              f"{' '.join(str(exc).split())[:100]})") from None


def _header_entry(path: Path, name, entry, data_bytes: int) -> None:
    """Checks one tensor's header entry: dtype, shape, offsets inside the data, and a
    byte count that matches the shape."""
    if name == "__metadata__":
        if not isinstance(entry, dict):
            raise CheckpointError(f"{path}: __metadata__ is not an object")
        return
    if not isinstance(entry, dict):
        raise CheckpointError(f"{path}: header entry {name!r} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str):
        raise CheckpointError(f"{path}: tensor {name} has no dtype")
    if not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise CheckpointError(f"{path}: tensor {name} has a bad shape {shape!r:.60}")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(
            isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            and 0 <= offsets[0] <= offsets[1] <= data_bytes):
        raise CheckpointError(f"{path}: tensor {name} has data offsets {offsets!r:.60} "
                              f"outside the file's {data_bytes} data bytes")
    if dtype in _DTYPES:
        need = int(np.prod(shape, dtype=object)) * np.dtype(_DTYPES[dtype]).itemsize
        if offsets[1] - offsets[0] != need:
            raise CheckpointError(f"{path}: tensor {name} ({dtype}, shape {shape}) needs "
                                  f"{need} bytes, its offsets span {offsets[1] - offsets[0]}")


def read_safetensors_header(path: Path) -> tuple[dict, int]:
    """(header, offset of the data) of a safetensors file; the header is checked against
    the file (its length, every tensor's dtype, shape and byte range), so a hostile or
    truncated file is a CheckpointError, not a read past its end."""
    size = Path(path).stat().st_size
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise CheckpointError(f"{path} is not a safetensors file (too short)")
        (length,) = struct.unpack("<Q", raw)
        if length > size - 8 or length > MAX_HEADER_BYTES:
            raise CheckpointError(f"{path}: safetensors header length {length} does not fit "
                                  f"the file ({size} bytes)")
        try:
            header = json.loads(f.read(length))
        except (ValueError, RecursionError):
            raise CheckpointError(f"{path} has an unreadable safetensors header") from None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: the safetensors header is not a JSON object")
    for name, entry in header.items():
        _header_entry(path, name, entry, size - 8 - length)
    return header, 8 + length


def read_tensor(path: Path, entry: dict, data_start: int) -> np.ndarray:
    """One tensor as float32 (bfloat16 and float16 are widened exactly)."""
    dtype = entry["dtype"]
    if dtype not in _DTYPES:
        raise CheckpointError(f"{path}: tensor dtype {dtype} is not supported")
    begin, end = entry["data_offsets"]
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=data_start + begin,
                    shape=(end - begin,)) if end > begin else np.zeros(0, np.uint8)
    values = raw.view(np.dtype(_DTYPES[dtype]).newbyteorder("<"))
    if dtype == "BF16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    return values.astype(np.float32).reshape(entry["shape"])


def text_name(name: str) -> str | None:
    """The `Qwen3_5ForCausalLM` name of a checkpoint tensor, or None for tensors outside
    the text model (vision tower, multi-token prediction)."""
    if name.startswith(("mtp.", "model.visual.")):
        return None
    if name.startswith("model.language_model."):
        return "model." + name[len("model.language_model."):]
    return name


def checkpoint_files(src: Path) -> list[Path]:
    """The safetensors files of a checkpoint directory (sharded or not), all present."""
    if (src / INDEX_FILE).is_file():
        weight_map = read_json(src / INDEX_FILE).get("weight_map")
        if not isinstance(weight_map, dict) or not all(
                isinstance(f, str) and f and "/" not in f and f not in (".", "..")
                for f in weight_map.values()):
            raise CheckpointError(f"{src / INDEX_FILE}: no weight_map of file names")
        files = sorted({src / f for f in weight_map.values()})
    else:
        files = [src / WEIGHTS_FILE]
    missing_files = [str(f) for f in files if not f.is_file()]
    if missing_files:
        raise CheckpointError(f"missing weight files: {missing_files}")
    return files


def load_checkpoint(directory: str | Path) -> QwenWeights:
    """Read a Qwen3.5 text model from a HF directory (ours, or a real release)."""
    src = Path(directory)
    config = read_config(src)[0]
    files = checkpoint_files(src)
    wanted = expected_shapes(config)
    tensors: dict[str, np.ndarray] = {}
    for path in files:
        header, data_start = read_safetensors_header(path)
        for name, entry in header.items():
            target = None if name == "__metadata__" else text_name(name)
            if target is None:
                continue
            if target == LM_HEAD and config.tie_word_embeddings:
                continue  # tied: the head is the embedding
            if target not in wanted:
                raise CheckpointError(f"{path.name}: unexpected tensor {name}")
            if tuple(entry["shape"]) != tuple(wanted[target]):
                raise CheckpointError(f"{path.name}: {name} has shape {entry['shape']}, "
                                      f"the config needs {list(wanted[target])}")
            tensors[target] = stored_form(read_tensor(path, entry, data_start))
    missing = sorted(set(wanted) - set(tensors))
    if missing:
        raise CheckpointError(f"{src}: missing weights {missing[:5]}"
                              f"{' ...' if len(missing) > 5 else ''}")
    return QwenWeights(config, tensors)


def read_rows(path: Path, entry: dict, data_start: int, start: int, stop: int):
    """Rows [start, stop) of a 2-D tensor in QwenWeights' stored form, read block by block
    from the mapping (a mostly-zero range becomes a SparseTensor without ever existing
    densely in float32)."""
    from qgpu.model.sparse_tensor import SparseTensor
    from qgpu.model.weights import SPARSE_MAX_FILL

    dtype = entry["dtype"]
    if dtype not in _DTYPES:
        raise CheckpointError(f"{path}: tensor dtype {dtype} is not supported")
    width = int(entry["shape"][1])
    item = np.dtype(_DTYPES[dtype]).newbyteorder("<")
    begin = entry["data_offsets"][0] + start * width * item.itemsize
    raw = np.memmap(path, dtype=item, mode="r", offset=data_start + begin,
                    shape=(stop - start, width))
    step = max(1, (WRITE_BLOCK_BYTES // 4) // max(width, 1))
    flat, values, nonzeros = [], [], 0
    for a in range(0, stop - start, step):
        block = raw[a:a + step]
        if dtype == "BF16":
            block = (block.astype(np.uint32) << 16).view(np.float32)
        block = np.ascontiguousarray(block, np.float32)
        where = np.flatnonzero(block.view(np.uint32))
        nonzeros += where.size
        if nonzeros > SPARSE_MAX_FILL * (stop - start) * width:   # dense after all
            return stored_form(read_tensor(path, entry, data_start)[start:stop])
        flat.append(where + a * width)
        values.append(block.reshape(-1)[where])
    return SparseTensor.from_flat((stop - start, width), np.concatenate(flat or [[]]),
                                  np.concatenate(values or [[]]))


def read_text_tensors(directory: str | Path, keep, rows: dict | None = None) -> dict:
    """The text-model tensors (Qwen3_5ForCausalLM names) of a checkpoint for which
    keep(name) is true, in QwenWeights' stored form; rows[name] = (start, stop) reads only
    those rows of that tensor. Nothing else of the files is read."""
    rows = rows or {}
    tensors = {}
    for path in checkpoint_files(Path(directory)):
        header, data_start = read_safetensors_header(path)
        for name, entry in header.items():
            target = None if name == "__metadata__" else text_name(name)
            if target is None or not keep(target):
                continue
            if target in rows:
                a, b = rows[target]
                if len(entry["shape"]) != 2 or not 0 <= a <= b <= entry["shape"][0]:
                    raise CheckpointError(f"{path.name}: {name} has shape {entry['shape']},"
                                          f" no rows {a}..{b}")
                tensors[target] = read_rows(path, entry, data_start, a, b)
            else:
                tensors[target] = stored_form(read_tensor(path, entry, data_start))
    return tensors
