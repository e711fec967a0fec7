"""Helpers for tests that compare against transformers' own Qwen3.5 classes."""

from __future__ import annotations

import numpy as np
import pytest

from qgpu.model.config import QwenConfig
from qgpu.model.weights import QwenWeights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")


def tiny_config(**overrides) -> QwenConfig:
    """A small Qwen3.5 text config with both mixer kinds and grouped value heads."""
    base = dict(hidden_size=64, num_hidden_layers=3,
                layer_types=["linear_attention", "full_attention", "linear_attention"],
                vocab_size=96, intermediate_size=80, linear_num_key_heads=2,
                linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=8,
                num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                tie_word_embeddings=False)
    base.update(overrides)
    return QwenConfig(**base)


def hf_model_from_weights(weights: QwenWeights):
    """Qwen3_5ForCausalLM holding exactly these weights (float32, eval mode)."""
    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

    hf_config = Qwen3_5TextConfig(**{k: v for k, v in weights.config.to_hf_dict().items()
                                     if k not in ("architectures", "model_type", "dtype")})
    model = Qwen3_5ForCausalLM(hf_config).float().eval()
    state = {k: torch.from_numpy(np.array(v, np.float32)) for k, v in weights.tensors.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    allowed = {"lm_head.weight"} if weights.config.tie_word_embeddings else set()
    assert set(missing) <= allowed and not unexpected, (missing, unexpected)
    if weights.config.tie_word_embeddings:
        model.tie_weights()
    return model


def random_weights(config: QwenConfig, seed: int = 0) -> QwenWeights:
    """Random weights large enough that every part of the layer math matters."""
    w = QwenWeights.random(config, seed=seed, scale=0.15)
    rng = np.random.default_rng(seed + 1)
    w["model.embed_tokens.weight"] = rng.normal(0, 1.0, w["model.embed_tokens.weight"].shape)
    return w
