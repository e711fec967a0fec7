"""FastEngine against ReferenceEngine: same logits (to fp32 rounding) and tokens on dense
and on sparse random models, skipped heads and units included; bit-identical states on
an exact (integer) workload. Exact designs are also tested through the circuit tests."""

import numpy as np
import pytest

from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine
from qgpu.model.sparse import SparseRows
from qgpu.model.weights import QwenWeights

from .hf_util import random_weights, tiny_config


def sparsify(weights, keep, seed):
    rng = np.random.default_rng(seed)
    for name, value in weights.tensors.items():
        if value.ndim == 2 and "embed" not in name:
            weights.tensors[name] = value * (rng.random(value.shape) < keep)
    return weights


@pytest.mark.parametrize("keep", [1.0, 0.15])
def test_fast_matches_reference(keep):
    config = tiny_config()
    weights = sparsify(random_weights(config, seed=3), keep, seed=4)
    # value head 1 of layer 0 dead: its state must stay zero and the head be skipped
    weights.tensors["model.layers.0.linear_attn.in_proj_qkv.weight"][
        2 * config.key_dim + 8: 2 * config.key_dim + 16] = 0
    ref, fast = ReferenceEngine(weights), FastEngine(weights)
    assert 1 not in fast.gdn[0].heads
    tokens = np.random.default_rng(5).integers(0, config.vocab_size, 40)
    s_ref, s_fast = ref.new_state(), fast.new_state()
    a = ref.prefill(s_ref, tokens[:30], mode="recurrent")
    b = fast.prefill(s_fast, tokens[:30])
    steps = [(ref.step(s_ref, int(t)), fast.step(s_fast, int(t))) for t in tokens[30:]]
    scale = np.abs(a).max()
    assert np.abs(a - b).max() < 1e-6 * scale
    assert max(np.abs(x - y).max() for x, y in steps) < 1e-6 * scale
    for i, S in s_ref.recurrent.items():
        assert np.abs(S - s_fast.recurrent[i]).max() < 1e-6
        channels = fast.conv_channels(i)
        assert np.abs(s_ref.conv[i][channels] - s_fast.conv[i]).max() < 1e-5
    assert not s_fast.recurrent[0][1].any()
    assert ref.generate([1, 2, 3], 16) == fast.generate([1, 2, 3], 16)


def test_exact_integer_workload_is_bit_identical():
    """Integer weights whose every sum is exact: the engines must agree bit for bit."""
    config = tiny_config(layer_types=["linear_attention"] * 2 + ["full_attention"])
    weights = QwenWeights.zeros(config)
    rng = np.random.default_rng(0)
    emb = np.zeros((config.vocab_size, config.hidden_size), np.float32)
    emb[:, :8] = rng.integers(-2, 3, (config.vocab_size, 8))
    emb[:, 8] = 8  # keeps the norm scale away from eps
    weights["model.embed_tokens.weight"] = emb
    for i in range(2):
        qkv = np.zeros((config.conv_dim, config.hidden_size), np.float32)
        qkv[:, 8] = 32 * (rng.random(config.conv_dim) < 0.05)  # keys, queries, values >= 16.7
        weights[f"model.layers.{i}.linear_attn.in_proj_qkv.weight"] = qkv
        conv = np.zeros((config.conv_dim, 1, 4), np.float32)
        conv[:, 0, 3] = 1
        weights[f"model.layers.{i}.linear_attn.conv1d.weight"] = conv
        weights[f"model.layers.{i}.linear_attn.A_log"] = np.full(4, -110.0)
        weights[f"model.layers.{i}.linear_attn.in_proj_b.weight"] = np.eye(4, 64, 8) * 32
    ref, fast = ReferenceEngine(weights), FastEngine(weights)
    s_ref, s_fast = ref.new_state(), fast.new_state()
    tokens = rng.integers(0, config.vocab_size, 50)
    np.testing.assert_array_equal(ref.prefill(s_ref, tokens, mode="recurrent"),
                                  fast.prefill(s_fast, tokens))
    for i in (0, 1):
        np.testing.assert_array_equal(s_ref.recurrent[i], s_fast.recurrent[i])
    assert fast.attention_layers == []  # the zero full-attention layer is skipped


def test_sparse_rows_products():
    rng = np.random.default_rng(1)
    for fill, shape in [(0.01, (300, 200)), (0.5, (40, 30)), (0.0, (5, 5))]:
        m = (rng.normal(size=shape) * (rng.random(shape) < fill)).astype(np.float32)
        sp = SparseRows(m)
        x = rng.normal(size=(3, shape[1])).astype(np.float32)
        full = np.zeros((3, shape[0]), np.float32)
        full[:, sp.rows] = sp.matmat(x)
        np.testing.assert_allclose(full, x @ m.T, atol=1e-5)
        np.testing.assert_allclose(sp.matvec(x[0]), (m @ x[0])[sp.rows], atol=1e-5)
