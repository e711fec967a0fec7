"""Checkpoint I/O: our directories load in unmodified transformers (no missing-weight
warnings) and generate the reference engine's tokens; real-release layout is readable."""

import json
import logging

import numpy as np
import pytest

from qgpu.model.checkpoint import (
    CheckpointError,
    load_checkpoint,
    save_checkpoint,
    write_safetensors,
)
from qgpu.model.reference import ReferenceEngine

from .hf_util import random_weights, tiny_config, torch


@pytest.mark.parametrize("tied", [False, True])
def test_saved_checkpoint_loads_and_generates_in_transformers(tmp_path, tied, caplog):
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    weights = random_weights(tiny_config(tie_word_embeddings=tied), seed=5)
    save_checkpoint(weights, tmp_path)
    hf_logging.enable_propagation()
    with caplog.at_level(logging.WARNING):
        model = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    hf_logging.disable_propagation()
    complaints = [r.getMessage() for r in caplog.records
                  if any(w in r.getMessage().lower() for w in ("missing", "newly initialized",
                                                               "not used", "unexpected"))]
    assert not complaints, complaints
    assert type(model).__name__ == "Qwen3_5ForCausalLM"
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), weights.tensors.get(
            name, weights.tensors["model.embed_tokens.weight"]), err_msg=name)
    prompt = [1, 2, 3, 40, 50]
    with torch.no_grad():
        hf = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)
    assert hf[0, len(prompt):].tolist() == ReferenceEngine(weights).generate(prompt, 8)


def test_round_trip_is_bit_exact(tmp_path):
    weights = random_weights(tiny_config(), seed=2)
    back = load_checkpoint(save_checkpoint(weights, tmp_path))
    assert back.config == weights.config
    for name, value in weights.tensors.items():
        np.testing.assert_array_equal(back[name], value)


def test_reads_release_layout_with_vision_mtp_shards_and_bf16(tmp_path):
    """A fake directory laid out as Qwen3.5 releases are: nested config, text weights
    under model.language_model.*, vision and mtp weights beside them, two shards, bf16."""
    weights = random_weights(tiny_config(tie_word_embeddings=True), seed=4)
    text = weights.config.to_hf_dict()
    config = {"model_type": "qwen3_5", "architectures": ["Qwen3_5ForConditionalGeneration"],
              "tie_word_embeddings": True, "text_config": text, "vision_config": {"depth": 1}}
    (tmp_path / "config.json").write_text(json.dumps(config))
    bf16 = {}
    for name, value in weights.tensors.items():
        # round to bf16 (truncation is enough for a layout test); keep raw bits as F32 pairs
        bf16["model.language_model." + name[len("model."):]] = value
    shards = {"model-00001-of-00002.safetensors": {}, "model-00002-of-00002.safetensors": {}}
    names = sorted(bf16)
    for i, name in enumerate(names):
        shards[list(shards)[i % 2]][name] = bf16[name]
    shards["model-00002-of-00002.safetensors"]["model.visual.blocks.0.attn.qkv.weight"] = \
        np.ones((3, 4), np.float32)
    shards["model-00001-of-00002.safetensors"]["mtp.fc.weight"] = np.ones((2, 2), np.float32)
    weight_map = {}
    for file, tensors in shards.items():
        _write_bf16_safetensors(tmp_path / file, tensors)
        weight_map.update(dict.fromkeys(tensors, file))
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))

    back = load_checkpoint(tmp_path)
    assert back.config.tie_word_embeddings and back.config.hidden_size == 64
    for name, value in weights.tensors.items():
        expected = (value.view(np.uint32) & 0xFFFF0000).view(np.float32)
        np.testing.assert_array_equal(back[name], expected, err_msg=name)


def _write_bf16_safetensors(path, tensors):
    import struct
    header, offset, blobs = {}, 0, []
    for name, value in tensors.items():
        raw = (np.ascontiguousarray(value, np.float32).view(np.uint32) >> 16).astype("<u2")
        header[name] = {"dtype": "BF16", "shape": list(value.shape),
                        "data_offsets": [offset, offset + raw.nbytes]}
        offset += raw.nbytes
        blobs.append(raw.tobytes())
    head = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def test_missing_weights_are_named(tmp_path):
    weights = random_weights(tiny_config(), seed=1)
    save_checkpoint(weights, tmp_path)
    tensors = {k: v for k, v in weights.tensors.items() if "layers.2.mlp" not in k}
    write_safetensors(tmp_path / "model.safetensors", tensors)
    with pytest.raises(CheckpointError, match="layers.2.mlp"):
        load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="no config.json"):
        load_checkpoint(tmp_path / "nowhere")


def test_sparse_weights_write_the_dense_bytes_in_row_blocks(tmp_path, monkeypatch):
    """A model held sparse writes the same file as held dense, in blocks smaller than a
    tensor, and reads back with its large sparse matrices sparse again."""
    from qgpu.model import checkpoint
    from qgpu.model.sparse_tensor import SparseTensor
    from qgpu.model.weights import EMBED, QwenWeights

    config = tiny_config(vocab_size=2048)
    weights = QwenWeights.zeros(config)
    rng = np.random.default_rng(0)
    weights[EMBED][rng.integers(0, 2048, 300), rng.integers(0, 64, 300)] = 1.5
    weights["model.layers.0.mlp.up_proj.weight"][3, 5] = -2.0
    assert weights.is_sparse(EMBED)
    dense = {k: np.asarray(v) for k, v in weights.tensors.items()}
    monkeypatch.setattr(checkpoint, "WRITE_BLOCK_BYTES", 4096)
    save_checkpoint(weights, tmp_path / "sparse")
    write_safetensors(tmp_path / "dense.safetensors", dense)
    assert (tmp_path / "sparse" / "model.safetensors").read_bytes() == \
        (tmp_path / "dense.safetensors").read_bytes()
    back = load_checkpoint(tmp_path / "sparse")
    assert isinstance(back[EMBED], SparseTensor)
    for name, value in dense.items():
        np.testing.assert_array_equal(np.asarray(back[name]), value, err_msg=name)
