"""merge.merge / merge.tensors in memory: every demo launch inside merged models of several
random bases is token-exact on the fast engine, its results (the circuit layers' states)
bit-equal to the circuit's own; text around launches never touches the circuit; text
logits stay the base's, GPU tokens get no probability at text positions and win by a wide
margin at GPU positions; a launch leaves the base's GDN states exactly as they were."""

import numpy as np
import pytest

from qgpu.examples.demos import DEMOS
from qgpu.merge import merge_weights
from qgpu.merge.layout import CONV_PAD
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import EMBED

from .helpers import BASES, demo_circuit, random_base, text_kl


@pytest.mark.parametrize("base_name", sorted(BASES))
@pytest.mark.parametrize("demo_name", sorted(DEMOS))
def test_demo_launch_is_token_exact_in_the_merged_model(base_name, demo_name):
    demo, part = demo_circuit(demo_name)
    merged, lay = merge_weights(random_base(base_name, seed=3), part)
    tokens = demo.stream(150, seed=5)
    engine = FastEngine(merged)
    state = engine.new_state()
    logits = engine.prefill(state, [lay.gpu_token(t) for t in tokens])
    assert (logits.argmax(1) - lay.gpu_token_offset).tolist() == demo.answers(tokens)
    alone = FastEngine(part.weights)
    want = alone.new_state()
    alone.prefill(want, tokens)
    for layer, rows in want.recurrent.items():  # results read from the merged state
        np.testing.assert_array_equal(state.recurrent[layer], rows)


@pytest.mark.parametrize("demo_name", sorted(DEMOS))
def test_text_between_launches_leaves_the_circuit_untouched(demo_name):
    """Launches separated by text, each opened by CONV_PAD pad tokens: answers equal the
    oracle of the launches alone, the circuit's states equal the circuit's own run on the
    GPU tokens alone. Without the pads the circuit's conv windows hold the text's
    projections (the shared dims carry the base's values) and the answers go wrong."""
    demo, part = demo_circuit(demo_name)
    merged, lay = merge_weights(random_base("h96_untied", seed=4), part)
    rng = np.random.default_rng(8)
    launches = [demo.stream(50, seed=s) for s in range(3)]
    engine = FastEngine(merged)
    state, got = engine.new_state(), []
    for launch in launches:
        engine.prefill(state, rng.integers(0, lay.gpu_token_offset, 5).tolist()
                       + [lay.pad_token] * CONV_PAD)
        logits = engine.prefill(state, [lay.gpu_token(t) for t in launch])
        got += (logits.argmax(1) - lay.gpu_token_offset).tolist()
    everything = sum(launches, [])
    assert got == demo.answers(everything)
    alone = FastEngine(part.weights)
    want = alone.new_state()
    alone.prefill(want, everything)
    for layer, rows in want.recurrent.items():
        np.testing.assert_array_equal(state.recurrent[layer], rows)


@pytest.mark.parametrize("base_name", sorted(BASES))
def test_text_distribution_is_the_bases(base_name):
    _, part = demo_circuit("adder")
    base = random_base(base_name, seed=6)
    merged, lay = merge_weights(base, part)
    text = np.random.default_rng(2).integers(0, base.config.vocab_size, 70).tolist()
    for mode in ("recurrent", "chunked"):
        original = ReferenceEngine(base).prefill(ReferenceEngine(base).new_state(), text, mode)
        ref = ReferenceEngine(merged)
        logits = ref.prefill(ref.new_state(), text, mode)
        assert text_kl(original, logits).max() < 1e-9
        gpu = logits[:, lay.gpu_token_offset:]
        assert gpu.max() < -1e12  # exp underflows: probability exactly 0
        np.testing.assert_allclose(logits[:, :lay.gpu_token_offset], original, rtol=1e-5, atol=1e-4)


def test_without_compensation_text_drifts():
    """The measurement the compensation is for: the same merge with the norms left alone
    or only rescaled by sqrt(Hb/H) moves the text distribution by orders of magnitude.
    Embeddings as small as trained ones (std 0.02) make the eps term matter."""
    _, part = demo_circuit("register_echo")
    base = random_base("h64_tied", seed=6)
    base[EMBED] = base[EMBED] * 0.02
    text = np.random.default_rng(2).integers(0, base.config.vocab_size, 40).tolist()
    original = ReferenceEngine(base).prefill(ReferenceEngine(base).new_state(), text)
    kl = {}
    for mode in ("exact", "ratio", "none"):
        merged, _ = merge_weights(base, part, norm_mode=mode)
        ref = ReferenceEngine(merged)
        kl[mode] = text_kl(original, ref.prefill(ref.new_state(), text)).mean()
    # sharing dims widens the stream by a few dims only (64 -> 68): the eps term is small
    assert kl["exact"] < 1e-11 and kl["ratio"] > 1e3 * kl["exact"] and kl["none"] > 1e-6


def test_gpu_positions_give_text_and_pad_tokens_no_chance_and_a_wide_margin():
    """At a GPU position the text rows read the GPU flag (logits below -1e6), the GPU
    rows win by ~2048 (the circuit's margin 2 x the logit gain)."""
    demo, part = demo_circuit("counter")
    merged, lay = merge_weights(random_base("h160_tied_two_full", seed=1), part)
    tokens = demo.stream(60, seed=9)
    ref = ReferenceEngine(merged)
    logits = ref.prefill(ref.new_state(), [lay.gpu_token(t) for t in tokens])
    assert logits[:, :lay.gpu_token_offset].max() < -1e6
    assert logits[:, lay.pad_token].max() < -1e6
    top2 = np.sort(logits[:, lay.gpu_token_offset:lay.pad_token], axis=1)[:, -2:]
    assert (top2[:, 1] - top2[:, 0]).min() >= 2000 and top2[:, 1].min() >= 2000


@pytest.mark.parametrize("neutralise", [True, False])
def test_a_launch_leaves_the_bases_gdn_state_as_it_was(neutralise):
    """GPU tokens in the base's GDN layers: beta = 0 and decay exactly 1 (neutralised by
    the GPU flag); without those gates the launch decays and writes the base's state.
    Pads have exactly zero keys in the base's attention; GPU tokens' keys there are ~0
    (the kill: their shared dims reach the base scaled by ~2^-50), their values ~0."""
    demo, part = demo_circuit("register_echo")
    merged, lay = merge_weights(random_base("h64_tied", seed=2), part, neutralise=neutralise)
    ref = ReferenceEngine(merged)
    state = ref.new_state()
    ref.prefill(state, np.random.default_rng(1).integers(0, 150, 30).tolist()
                + [lay.pad_token] * CONV_PAD)
    before = {k: v.copy() for k, v in state.recurrent.items() if k >= lay.circuit_layers}
    ref.prefill(state, [lay.gpu_token(t) for t in demo.stream(20, seed=1)])
    same = [np.array_equal(state.recurrent[k], v) for k, v in before.items()]
    assert all(same) if neutralise else not any(same)
    for k in (k for k in state.keys if k >= lay.circuit_layers):
        text_keys = np.abs(state.keys[k][:30]).max()
        assert not state.keys[k][30:33].any() and not state.values[k][30:33].any()
        assert np.abs(state.keys[k][33:]).max() < 1e-9 * text_keys
        assert np.abs(state.values[k][33:]).max() < 1e-9 * np.abs(state.values[k][:30]).max()


@pytest.mark.parametrize("base_name", sorted(BASES))
def test_launches_can_skip_the_base_layers_exactly(base_name):
    """runtime.checkpoint.launch_weights: the circuit layers, final norm and GPU rows
    alone give the merged model's GPU-row logits at GPU positions (the base layers add
    exactly 0 to a GPU token: equal up to the summation order of the head's product,
    which differs between the numpy and native backends) and the same circuit states."""
    from qgpu.runtime.checkpoint import launch_weights

    demo, part = demo_circuit("adder")
    merged, lay = merge_weights(random_base(base_name, seed=9), part)
    info = {**lay.describe(), "circuit": part.name}
    view = launch_weights(merged, info)
    assert view.config.num_hidden_layers == lay.circuit_layers
    assert view.config.vocab_size == part.vocab_size
    tokens = demo.stream(120, seed=4)
    whole, alone = FastEngine(merged), FastEngine(view)
    s1, s2 = whole.new_state(), alone.new_state()
    want = whole.prefill(s1, [lay.gpu_token(t) for t in tokens])
    got = alone.prefill(s2, tokens)
    np.testing.assert_allclose(got, want[:, lay.gpu_token_offset:lay.pad_token], rtol=1e-6,
                               atol=1e-3)
    assert got.argmax(1).tolist() == (want.argmax(1) - lay.gpu_token_offset).tolist() \
        == demo.answers(tokens)
    for layer, rows in s2.recurrent.items():
        np.testing.assert_array_equal(s1.recurrent[layer], rows)


@pytest.mark.parametrize("base_name", sorted(BASES))
def test_a_kill_layer_when_the_last_circuit_layer_has_no_free_unit(base_name):
    """kill_layer (chosen by make_layout when the circuit's last layer has no free MLP
    unit; forced here): one more layer after the circuit's, zero but the kill unit;
    launches stay token-exact, text stays the base's."""
    demo, part = demo_circuit("counter")
    base = random_base(base_name, seed=11)
    merged, lay = merge_weights(base, part, kill_layer=True)
    assert lay.circuit_layers == part.config.num_hidden_layers + 1
    assert merged.config.num_hidden_layers == lay.circuit_layers + base.config.num_hidden_layers
    tokens = demo.stream(100, seed=6)
    engine = FastEngine(merged)
    logits = engine.prefill(engine.new_state(), [lay.gpu_token(t) for t in tokens])
    assert (logits.argmax(1) - lay.gpu_token_offset).tolist() == demo.answers(tokens)
    text = np.random.default_rng(4).integers(0, base.config.vocab_size, 40).tolist()
    want = ReferenceEngine(base).prefill(ReferenceEngine(base).new_state(), text)
    got = ReferenceEngine(merged).prefill(ReferenceEngine(merged).new_state(), text)
    assert text_kl(want, got).max() < 1e-9
