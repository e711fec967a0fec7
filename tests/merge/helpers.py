"""Small random bases and compiled demo circuits for the merge tests."""

from __future__ import annotations

import functools
import json
import struct

import numpy as np

from qgpu.examples.demos import DEMOS
from qgpu.merge.circuits import demo_part
from qgpu.merge.layout import layer_shape_of
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import EMBED, QwenWeights

# (hidden, layer types, tied): sizes and mixes of linear and full attention
BASES = {
    "h64_tied": (64, [LINEAR, LINEAR, LINEAR, FULL], True),
    "h96_untied": (96, [LINEAR, FULL, LINEAR], False),
    "h160_tied_two_full": (160, [FULL, LINEAR, LINEAR, FULL, LINEAR], True),
}


def base_config(hidden: int, types: list[str], tied: bool, vocab: int = 150) -> QwenConfig:
    """Layer shapes the small demo compile fits in: 4 heads of 32, MLP 512."""
    return QwenConfig(hidden_size=hidden, num_hidden_layers=len(types), layer_types=types,
                      vocab_size=vocab, intermediate_size=512, linear_num_key_heads=4,
                      linear_num_value_heads=4, linear_key_head_dim=32,
                      linear_value_head_dim=32, num_attention_heads=2, num_key_value_heads=1,
                      head_dim=16, tie_word_embeddings=tied)


def random_base(name: str = "h64_tied", seed: int = 0) -> QwenWeights:
    """Random weights large enough that every part of the base's math matters."""
    hidden, types, tied = BASES[name]
    w = QwenWeights.random(base_config(hidden, types, tied), seed=seed, scale=0.15)
    rng = np.random.default_rng(seed + 1)
    w[EMBED] = rng.normal(0, 1.0, w[EMBED].shape)
    return w


@functools.cache
def demo_circuit(name: str):
    """(demo, CircuitPart) at the layer shape every test base shares."""
    shape = layer_shape_of(base_config(64, [LINEAR, FULL], True))
    return DEMOS[name](), demo_part(name, shape, cache=False)


def write_release_layout(directory, weights: QwenWeights, bf16: bool = True) -> None:
    """A directory laid out as Qwen3.5 releases are: nested config, text weights under
    model.language_model.*, a vision tower and mtp.* beside them, two shards, bf16."""
    text = weights.config.to_hf_dict()
    text["eos_token_id"] = 3
    config = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
              "tie_word_embeddings": weights.config.tie_word_embeddings, "text_config": text,
              "vision_config": {"depth": 1}}
    (directory / "config.json").write_text(json.dumps(config))
    tensors = {"model.language_model." + k[len("model."):] if k.startswith("model.") else k: v
               for k, v in weights.tensors.items()}
    tensors["model.visual.blocks.0.attn.qkv.weight"] = np.ones((3, 4), np.float32)
    tensors["mtp.fc.weight"] = np.ones((2, 2), np.float32)
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {name: files[i % 2] for i, name in enumerate(sorted(tensors))}
    for file in files:
        _write(directory / file, {k: tensors[k] for k, f in weight_map.items() if f == file},
               bf16)
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map":
                                                                        weight_map}))


def _write(path, tensors, bf16: bool) -> None:
    header, offset, blobs = {}, 0, []
    for name, value in tensors.items():
        value = np.ascontiguousarray(value, np.float32)
        raw = (value.view(np.uint32) >> 16).astype("<u2") if bf16 else value.astype("<f4")
        header[name] = {"dtype": "BF16" if bf16 else "F32", "shape": list(value.shape),
                        "data_offsets": [offset, offset + raw.nbytes]}
        offset += raw.nbytes
        blobs.append(raw.tobytes())
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    x = logits.astype(np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def text_kl(original: np.ndarray, merged: np.ndarray) -> np.ndarray:
    """KL(original || merged) per position; merged's GPU tokens count as mass lost."""
    p, q = log_softmax(original), log_softmax(merged)
    return (np.exp(p) * (p - q[:, :p.shape[1]])).sum(-1)
