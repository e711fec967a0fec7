"""Row memory, copies, clear, latch and token history through the real layer math:
reference engine (both GDN paths), fast engine, and transformers loaded from a saved
checkpoint. Results are checked as exact tokens and exact state values."""

import numpy as np
import pytest

from qgpu.analysis.circuit_report import threshold_report
from qgpu.examples.table_machine import build_table_machine
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import EMBED, QwenWeights
from qgpu.primitives.gdn_memory import BALLAST, VALUE, latch, token_history
from qgpu.primitives.norm import NormLedger


def workload(machine, n, seed):
    """Random writes, overwrites, reads through every copy and clears, with the answers
    and the table expected at the end."""
    rng = np.random.default_rng(seed)
    table, tokens, want = {}, [], []
    for _ in range(n):
        r = rng.random()
        if r < 0.45:
            a, v = int(rng.integers(machine.rows)), int(rng.integers(2 ** machine.bits))
            table[a] = v
            tokens.append(machine.write(a, v))
            want.append(machine.val(v))
        elif r < 0.99:
            a, c = int(rng.integers(machine.rows)), int(rng.integers(machine.copies))
            tokens.append(machine.read(a, c))
            want.append(machine.val(table[a]) if a in table else machine.none)
        else:
            table.clear()
            tokens.append(machine.clear)
            want.append(machine.none)
    return tokens, want, table


def expected_state(machine, table):
    c = machine.weights.config
    S = np.zeros((c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim),
                 np.float32)
    for a, v in table.items():
        for m in range(machine.bits):
            b = v >> m & 1
            S[:machine.copies, a, 2 * m:2 * m + 2] = (VALUE * b, VALUE * (1 - b))
        S[:machine.copies, a, -1] = BALLAST
    return S


@pytest.mark.slow
def test_table_in_reference_and_fast_engines_long_run():
    machine = build_table_machine()
    tokens, want, table = workload(machine, 3000, seed=1)
    ref, fast = ReferenceEngine(machine.weights), FastEngine(machine.weights)
    for engine, mode in ((ref, "recurrent"), (ref, "chunked"), (fast, "recurrent")):
        state = engine.new_state()
        got = engine.prefill(state, tokens, mode=mode).argmax(1)
        assert got.tolist() == want, (type(engine).__name__, mode)
        np.testing.assert_array_equal(state.recurrent[0], expected_state(machine, table))
    report = threshold_report(machine.weights, machine.thresholds, tokens[:400])
    assert report.min_ratio > 100, str(report)


def test_table_decoded_step_by_step_matches():
    machine = build_table_machine(rows=16, bits=3, copies=3, head_dim=16)
    tokens, want, table = workload(machine, 200, seed=2)
    fast = FastEngine(machine.weights)
    state = fast.new_state()
    assert [fast.greedy(fast.step(state, t)) for t in tokens] == want
    np.testing.assert_array_equal(state.recurrent[0], expected_state(machine, table))


@pytest.mark.slow
def test_table_in_transformers_from_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, DynamicCache

    from qgpu.model.checkpoint import save_checkpoint

    machine = build_table_machine()
    save_checkpoint(machine.weights, tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    tokens, want, table = workload(machine, 300, seed=3)
    cache = DynamicCache(config=model.config)
    with torch.no_grad():  # prompt through the chunked path, then decode steps
        out = model(torch.tensor([tokens[:200]]), cache=cache, use_cache=True)
        got = out.logits[0].argmax(-1).tolist()
        for t in tokens[200:]:
            out = model(torch.tensor([[t]]), cache=cache, use_cache=True)
            got.append(int(out.logits[0, -1].argmax()))
    assert got == want
    np.testing.assert_array_equal(cache.layers[0].recurrent_states[0][0].numpy(),
                                  expected_state(machine, table))


def small_model():
    config = QwenConfig(hidden_size=64, num_hidden_layers=2, layer_types=[LINEAR, FULL],
                        vocab_size=16, intermediate_size=32, linear_num_key_heads=2,
                        linear_num_value_heads=2, linear_key_head_dim=32,
                        linear_value_head_dim=32, num_attention_heads=2,
                        num_key_value_heads=1, head_dim=16, tie_word_embeddings=False)
    w = QwenWeights.zeros(config)
    ledger = NormLedger(64, one=0, ballast=[60, 61, 62, 63])
    emb = np.zeros((16, 64), np.float32)
    for t in range(16):  # dim 1: set flag (0/1), dim 5 its complement; dims 2-4: bits
        bits = {2 + i: (1 if t >> i & 1 else -1) for i in range(3)}
        emb[t] = ledger.embedding_row({1 if t >= 8 else 5: 1, **bits})
    ledger.set_norm_weights(w)
    w[EMBED] = emb
    return w


def mixer_reads(weights, tokens, dims):
    seen = []
    engine = ReferenceEngine(weights, observer=lambda layer, site, v: seen.append(v)
                             if (layer, site) == (0, "mixer_out") else None)
    engine.prefill(engine.new_state(), tokens, mode="recurrent")
    return seen[0][:, dims]


def test_latch_holds_last_set_value_exactly():
    w = small_model()
    latch(w, 0, 0, one=0, set_flag=1, data=[2, 3, 4], outputs=[10, 11, 12])
    tokens = [3, 9, 2, 5, 12, 0, 1, 15]  # tokens >= 8 set the latch
    reads = mixer_reads(w, tokens, [10, 11, 12])
    held = None
    for t, r in zip(tokens, reads, strict=True):
        held = t if t >= 8 else held
        want = [0, 0, 0] if held is None else [1 if held >> i & 1 else -1 for i in range(3)]
        assert r.tolist() == want  # reads land as exactly +-1


@pytest.mark.parametrize("lag", [1, 2, 3])
def test_token_history_sees_the_token_lag_back(lag):
    w = small_model()
    token_history(w, 0, 1, one=0, lag=lag, data=[2, 3, 4], outputs=[20, 21, 22])
    tokens = list(np.random.default_rng(lag).integers(0, 16, 30))
    reads = mixer_reads(w, tokens, [20, 21, 22])
    for t in range(30):
        want = ([0, 0, 0] if t < lag else
                [1 if tokens[t - lag] >> i & 1 else -1 for i in range(3)])
        assert reads[t].tolist() == want
    fast = FastEngine(w)
    ref = ReferenceEngine(w)
    s1, s2 = fast.new_state(), ref.new_state()
    fast.prefill(s1, tokens)
    ref.prefill(s2, tokens, mode="chunked")
    np.testing.assert_array_equal(s1.recurrent[0], s2.recurrent[0])
