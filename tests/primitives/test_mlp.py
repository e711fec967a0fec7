"""Exact MLP units through the real layer math: operands are token embeddings, results
are read as logits (every norm an exact identity thanks to the ledger), and must be
exact integers in the reference engine, the fast engine and transformers."""

import numpy as np
import pytest

from qgpu.model.config import FULL, QwenConfig
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights
from qgpu.primitives import MlpWriter
from qgpu.primitives.mlp import adder, compare, one_hot_decoder, product, select, step
from qgpu.primitives.norm import NormLedger, four_squares

HIDDEN = 128
ONE, BALLAST = 0, [124, 125, 126, 127]


def model_with(operands, build, outputs, units=1024, uniform=True):
    """One MLP layer (behind a zero attention layer): token t's embedding holds
    operands[t] ({dim: value}); `build(mlp, ledger)` emits units; logit j reads dim
    outputs[j]. Returns the logits of every token from each engine."""
    config = QwenConfig(hidden_size=HIDDEN, num_hidden_layers=1, layer_types=[FULL],
                        vocab_size=max(len(operands), len(outputs)), intermediate_size=units,
                        num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                        linear_num_key_heads=1, linear_num_value_heads=1,
                        linear_key_head_dim=16, linear_value_head_dim=16,
                        tie_word_embeddings=False)
    w = QwenWeights.zeros(config)
    ledger = NormLedger(HIDDEN, ONE, BALLAST)
    emb = np.zeros((config.vocab_size, HIDDEN), np.float32)
    for t, ops in enumerate(operands):
        emb[t] = ledger.embedding_row(ops, uniform)
    w[EMBED] = emb
    ledger.set_norm_weights(w)
    mlp = MlpWriter(w, 0)
    build(mlp, ledger)
    head = np.zeros((config.vocab_size, HIDDEN), np.float32)
    head[np.arange(len(outputs)), outputs] = 1
    w[LM_HEAD] = head
    tokens = list(range(len(operands)))
    seen = {}
    engine = ReferenceEngine(w, observer=lambda layer, site, v: seen.setdefault(site, v))
    ref = engine.prefill(engine.new_state(), tokens)
    fast = FastEngine(w).prefill(FastEngine(w).new_state(), tokens)
    np.testing.assert_array_equal(ref, fast)
    if not uniform:  # data-dependent norms: read the MLP's output itself
        return w, seen["mlp_out"][:, outputs]
    return w, ref[:, :len(outputs)]


def bits(value, dims):
    return {d: (1.0 if value >> i & 1 else -1.0) for i, d in enumerate(dims)}


def test_adder16_and_comparators_are_exact():
    rng = np.random.default_rng(0)
    pairs = [(0, 0), (65535, 1), (65535, 65535), (1, 65534), (40000, 40000)]
    pairs += [tuple(int(x) for x in rng.integers(0, 65536, 2)) for _ in range(27)]
    a, b = list(range(1, 17)), list(range(17, 33))
    out, carry, ge, eq = list(range(33, 49)), 49, 50, 51

    def build(mlp, ledger):
        adder(mlp, a, b, out, ONE, carry_out=carry)
        compare(mlp, a, b, ONE, ge=ge, eq=eq)
        ledger.rebalance(mlp, ledger.row_sumsq + 19)  # 19 new +-1 dims

    operands = [{**bits(x, a), **bits(y, b)} for x, y in pairs]
    _, logits = model_with(operands, build, out + [carry, ge, eq])
    for (x, y), row in zip(pairs, logits, strict=True):
        assert row.tolist() == [float(v) for v in bits((x + y) % 65536, out).values()] + [
            1.0 if x + y >= 65536 else -1.0, 1.0 if x >= y else -1.0, 1.0 if x == y else -1.0]


def test_adder_with_carry_in_makes_32_bit_halves():
    a, b, cin = list(range(1, 17)), list(range(17, 33)), 40
    out = list(range(41, 57))
    cases = [(65535, 0, 1), (123, 456, 0), (32768, 32767, 1)]

    def build(mlp, ledger):
        adder(mlp, a, b, out, ONE, carry_in={cin: 0.5, ONE: 0.5})
        ledger.rebalance(mlp, ledger.row_sumsq + 16)

    operands = [{**bits(x, a), **bits(y, b), cin: 2.0 * c - 1} for x, y, c in cases]
    _, logits = model_with(operands, build, out)
    for (x, y, c), row in zip(cases, logits, strict=True):
        assert row.tolist() == list(bits((x + y + c) % 65536, out).values())


def test_decoder_step_select_product():
    sel_bits, value = [1, 2, 3], [4]
    onehot = list(range(10, 18))

    def build(mlp, ledger):
        one_hot_decoder(mlp, sel_bits, onehot, ONE)
        step(mlp, {4: 1.0}, 3.0, {20: 5.0}, ONE)  # 5 * [x >= 3]
        product(mlp, {4: 1.0}, {5: 1.0}, {21: 1.0}, ONE, a_bound=100)  # x * y
        select(mlp, {6: 1.0}, {4: 1.0}, {22: 1.0}, ONE, value_bound=100)  # s * x

    operands = []
    for t in range(8):
        operands.append({**bits(t, sel_bits), value[0]: float(t * 7 - 20), 5: float(t - 3),
                         6: float(t % 2), 7: float(1 - t % 2)})
    w, logits = model_with(operands, build, onehot + [20, 21, 22], uniform=False)
    for t, row in enumerate(logits):
        x = t * 7 - 20
        assert row[:8].tolist() == [1.0 if v == t else 0.0 for v in range(8)]
        assert row[8:].tolist() == [5.0 * (x >= 3), float(x * (t - 3)), float(x * (t % 2))]


@pytest.mark.slow
def test_adder_in_transformers():
    torch = pytest.importorskip("torch")
    from tests.model.hf_util import hf_model_from_weights

    a, b, out = list(range(1, 17)), list(range(17, 33)), list(range(33, 49))
    pairs = [(65535, 1), (12345, 54321), (7, 9)]

    def build(mlp, ledger):
        adder(mlp, a, b, out, ONE)
        ledger.rebalance(mlp, ledger.row_sumsq + 16)

    w, logits = model_with([{**bits(x, a), **bits(y, b)} for x, y in pairs], build, out)
    model = hf_model_from_weights(w)
    with torch.no_grad():
        hf = model(torch.arange(3)[None]).logits[0, :, :16].numpy()
    np.testing.assert_array_equal(hf, logits)


def test_four_squares_and_identity_norm():
    for n in [0, 1, 7, 8191, 123457, 64 * 2048 - 77]:
        assert sum(x * x for x in four_squares(n)) == n
    ledger = NormLedger(256, ONE, [1, 2, 3, 4])
    row = ledger.embedding_row({10: 1, 11: -1, 12: 32})
    assert ledger.is_identity(row[None])
    assert not ledger.is_identity(row[None] * 1.5)
