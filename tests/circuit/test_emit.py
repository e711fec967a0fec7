"""The emitter's weights through the layer math: raw reads are exactly +-2^-20 or 0 and
never disturb a norm (written and unwritten rows, both GDN paths, both engines), every
RMSNorm is the identity, and the model has the layout the plan says."""

import numpy as np
import pytest

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import READ_SCALE, Table
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import counter_record, register_echo
from qgpu.model import layers
from qgpu.model.config import FULL
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine


def observed(weights, tokens, mode):
    seen = {}
    engine = ReferenceEngine(weights, observer=lambda layer, site, v:
                             seen.setdefault((layer, site), []).append(v.copy()))
    logits = engine.prefill(engine.new_state(), tokens, mode=mode)
    return {k: np.concatenate(v) for k, v in seen.items()}, logits


@pytest.mark.parametrize("mode", ["recurrent", "chunked"])
def test_raw_reads_are_exact_and_norm_neutral(mode):
    demo = register_echo()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    plan, v = compiled.plan, demo.vocab
    # GETs of registers never set (read 0) between writes and overwrites
    tokens = [v.id("GET", 3), v.id("SET", 1, 9), v.id("GET", 1), v.id("GET", 2),
              v.id("SET", 1, 6), v.id("GET", 1)] + demo.stream(200, seed=5)
    seen, logits = observed(compiled.weights, tokens, mode)
    table = next(n for n in plan.order if isinstance(n, Table))
    raw = plan.dims[table.reads[0].raw]
    reads = seen[(0, "mixer_out")][:, raw]
    assert set(np.unique(np.abs(reads))) <= {0.0, np.float32(READ_SCALE)}
    if mode == "recurrent":  # exact on the decode path; within 2^-20 * 3e-7 when chunked
        assert np.all(reads[0] == 0) and np.all(np.abs(reads[2]) == np.float32(READ_SCALE))
    h1 = seen[(0, "residual_in")] + seen[(0, "mixer_out")]
    assert np.all(layers.mean_square(h1) == plan.mean)  # the tiny squares vanish in the sum
    np.testing.assert_array_equal(seen[(0, "mlp_in")], h1)  # post-mixer norm: identity
    assert demo.answers(tokens) == logits.argmax(1).tolist()


def test_raw_read_squares_vanish_in_any_summation_order():
    """The proof's premise, directly: integer squares plus tiny squares whose total is
    below 2^-24 sum to the integer total in every order (numpy pairwise, sequential,
    reversed, blocked)."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(40, 3000))
        x = np.zeros(n, np.float32)
        k = int(rng.integers(1, n // 2))
        x[:k] = rng.choice([-1.0, 1.0], k)
        x[k:k + 200] = rng.choice([-READ_SCALE, 0.0, READ_SCALE], min(200, n - k))
        rng.shuffle(x)
        sq = x * x
        exact = np.float32(k)
        assert np.sum(sq, dtype=np.float32) == exact
        acc = np.float32(0)
        for s in sq:
            acc = np.float32(acc + s)
        assert acc == exact
        acc = np.float32(0)
        for s in sq[::-1]:
            acc = np.float32(acc + s)
        assert acc == exact
        assert np.float32(sum(np.sum(sq[i::16], dtype=np.float32) for i in range(16))) == exact


def test_layout_matches_the_plan():
    demo = counter_record()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    w, plan = compiled.weights, compiled.plan
    assert w.config.hidden_size == plan.hidden
    assert w.config.layer_types[plan.attention_layer] == FULL
    assert w.layer_is_zero_attention(plan.attention_layer)
    for layer in range(plan.n_layers):
        live = np.flatnonzero(np.any(w.layer(layer, "mlp.gate_proj.weight") != 0, axis=1))
        ledger = 1 if len(live) > plan.units[layer] else 0
        assert len(live) == plan.units[layer] + ledger
    norms = [w.layer(i, "input_layernorm.weight") for i in range(plan.n_layers)]
    assert all(np.all(n == np.sqrt(plan.mean) - 1) for n in norms)


def test_fast_engine_state_and_logits_equal_the_reference():
    demo = counter_record()
    compiled = compile_circuit(demo.circuit, LayerShape.small(), cache=False)
    tokens = demo.stream(300, seed=2)
    ref, fast = ReferenceEngine(compiled.weights), FastEngine(compiled.weights)
    s1, s2 = ref.new_state(), fast.new_state()
    np.testing.assert_array_equal(ref.prefill(s1, tokens, mode="recurrent"),
                                  fast.prefill(s2, tokens))
    for layer in s2.recurrent:
        np.testing.assert_array_equal(s1.recurrent[layer], s2.recurrent[layer])
