"""merge.layout: the constants that keep GPU tokens' norms exact and text tokens' norms
as in the base, checked in exact (rational) arithmetic; shape and precision errors."""

import math
from fractions import Fraction

import numpy as np
import pytest

from qgpu.merge.layout import MergeError, MergeLayout, gpu_ballast, layer_shape_of, squares
from qgpu.merge.size import circuit_config
from qgpu.model.config import QwenConfig

from .helpers import BASES, base_config


def layout_for(base: QwenConfig, circuit_hidden: int = 38, **options) -> MergeLayout:
    return MergeLayout(base, circuit_config(base, circuit_hidden, 3, 50), one=0, mean=64,
                       **options)


@pytest.mark.parametrize("shared", range(2040, 2060))
def test_gpu_ballast_fits_in_three_dims(shared):
    for circuit_hidden in (shared, shared - 17, shared - 1000):
        for m in (1, 2, 3):
            found = gpu_ballast(64 * (shared + 1 + m - circuit_hidden), m)
            if found is not None:
                break
        assert found is not None and found[0] >= 1
        assert sum(b * b for b in found) == 64 * (shared + 1 + m - circuit_hidden)


@pytest.mark.parametrize("n,k", [(64 * 64, 1), (64 * 2053, 4), (2 * 25, 2), (3 * 9, 3)])
def test_squares_sum_to_n(n, k):
    assert squares(7, 3) is None and squares(3, 1) is None
    parts = squares(n, k)
    assert parts is not None and len(parts) == k
    assert sum(p * p for p in parts) == n


@pytest.mark.parametrize("name", sorted(BASES))
@pytest.mark.parametrize("circuit_hidden", [38, 96, 300])
def test_gpu_rows_have_the_ledgers_mean_over_the_whole_stream(name, circuit_hidden):
    hidden, types, tied = BASES[name]
    lay = layout_for(base_config(hidden, types, tied), circuit_hidden)
    # circuit dims carry 64 * Hc; ballast (GPU flag first, >= 1) carries the rest of 64 * H
    assert sum(b * b for b in lay.ballast) == 64 * (lay.hidden - lay.circuit_hidden)
    assert lay.ballast[0] >= 1 and len(lay.ballast) <= 3
    assert lay.hidden == max(hidden, circuit_hidden) + 1 + len(lay.ballast) <= lay.shared + 4
    assert lay.ballast_dims[-1] == lay.hidden - 1 and lay.flag_dim == lay.shared
    assert lay.gpu_flag_dim == lay.ballast_dims[0] == lay.shared + 1


@pytest.mark.parametrize("hidden", [64, 96, 160, 2048])
@pytest.mark.parametrize("circuit_hidden", [38, 700, 5000])
def test_text_norm_compensation_is_exact_in_real_arithmetic(hidden, circuit_hidden):
    """(s^2 S + c^2) / H + eps == (s^2 Hb / H) (S / Hb + eps) for every S, with c^2 taken
    as eps (s^2 Hb - H) (c itself is rounded to float32, off by < 1e-7 relative)."""
    base = base_config(hidden, ["linear_attention", "full_attention"], True)
    lay = layout_for(base, circuit_hidden)
    s, hb, h = Fraction(lay.text_scale), Fraction(hidden), Fraction(lay.hidden)
    eps = Fraction(float(np.float32(base.rms_norm_eps)))
    assert s > 1 and math.log2(lay.text_scale).is_integer()
    c2 = eps * (s * s * hb - h)
    assert c2 > 0
    assert abs(Fraction(lay.flag_value) ** 2 / c2 - 1) < Fraction(1, 10 ** 6)
    for sumsq in (Fraction(1, 1000), Fraction(3), Fraction(12345, 7)):
        merged = (s * s * sumsq + c2) / h + eps
        assert merged == (s * s * hb / h) * (sumsq / hb + eps)
    assert lay.norm_factor == pytest.approx(math.sqrt(hidden / lay.hidden))


def test_weaker_norm_modes_for_measurement():
    base = base_config(64, ["linear_attention", "full_attention"], True)
    assert layout_for(base, norm_mode="none").norm_factor == 1.0
    assert layout_for(base, norm_mode="ratio").text_scale == 1.0
    with pytest.raises(MergeError, match="norm mode"):
        layout_for(base, norm_mode="sometimes")


def test_circuit_at_other_shapes_is_refused_with_the_difference_named():
    base = base_config(64, ["linear_attention", "full_attention"], True)
    other = circuit_config(QwenConfig(), 40, 2, 10)  # compiled at Qwen3.5-2B's shapes
    with pytest.raises(MergeError, match=r"key_dim 128 \(base 32\).*mlp 6144 \(base 512\)"):
        MergeLayout(base, other, one=0, mean=64)
    assert layer_shape_of(base).mlp == 512


def test_eps_that_breaks_the_circuits_exact_norms_is_refused():
    base = base_config(64, ["linear_attention", "full_attention"], True)
    base.rms_norm_eps = 1e-4
    with pytest.raises(MergeError, match="rms_norm_eps"):
        layout_for(base)


def test_merged_config_stacks_circuit_then_base():
    base = base_config(96, ["linear_attention", "full_attention", "linear_attention"], False)
    lay = layout_for(base)
    cfg = lay.merged_config()
    assert cfg.layer_types == lay.circuit.layer_types + base.layer_types
    assert cfg.vocab_size == base.vocab_size + 50 + 1 and lay.gpu_token(7) == base.vocab_size + 7
    assert lay.pad_token == base.vocab_size + 50
    assert not cfg.tie_word_embeddings and cfg.hidden_size == lay.hidden


@pytest.mark.parametrize("name", ["h64_tied", "h96_untied"])
def test_the_layouts_promises_hold_on_merged_tensors(name):
    """On a real merge (the adder demo into a small base, merge.merge_weights), not the
    layout's own formulas: every GPU row of the embedding has mean square `mean` over the
    whole merged stream, as the circuit's rows had over its own dims (its norms see what
    they saw alone); and a text token's embedding through a base layer's input norm in the
    merged model gives the base's normed values in the base's dims (float32 rounding)."""
    from qgpu.merge import merge_weights
    from qgpu.model.layers import rms_norm
    from qgpu.model.weights import EMBED

    from .helpers import demo_circuit, random_base

    _, part = demo_circuit("adder")
    base = random_base(name, seed=3)
    merged, lay = merge_weights(base, part)
    embed = np.asarray(merged[EMBED], np.float64)
    circuit_rows = np.asarray(part.weights[EMBED], np.float64)
    assert np.allclose((circuit_rows ** 2).mean(axis=1), lay.mean)
    gpu = embed[lay.gpu_token_offset:lay.pad_token]   # the pad (last) row is the layout's own
    assert len(gpu) == len(circuit_rows)
    np.testing.assert_allclose((gpu ** 2).mean(axis=1), lay.mean, rtol=1e-6)
    text = np.asarray(merged[EMBED][:lay.gpu_token_offset], np.float32)
    hb = base.config.hidden_size
    eps = base.config.rms_norm_eps
    for i in range(base.config.num_hidden_layers):
        key = "model.layers.{}.input_layernorm.weight"
        want = rms_norm(np.asarray(base[EMBED], np.float32), base[key.format(i)], eps)
        got = rms_norm(text, merged[key.format(lay.circuit_layers + i)], eps)
        np.testing.assert_allclose(got[:, :hb], want, rtol=2e-5, atol=2e-6)
