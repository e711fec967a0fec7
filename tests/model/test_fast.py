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


def test_sparse_rows_sum_in_the_native_kernels_order():
    """The CSR branch (scipy.sparse) sums each row's terms sequentially in column order,
    as fast_kernel.c does: bit for bit against that loop, on sums that are not exact."""
    rng = np.random.default_rng(2)
    m = (rng.normal(size=(400, 300)) * (rng.random((400, 300)) < 0.03)).astype(np.float32)
    sp = SparseRows(m)
    assert not sp.dense
    x = rng.normal(size=(7, 300)).astype(np.float32)
    want = np.zeros((7, sp.rows.size), np.float32)
    for i, r in enumerate(sp.rows):
        cols = np.flatnonzero(m[r])
        for t in range(7):
            acc = np.float32(0)
            for c in cols:
                acc = np.float32(acc + m[r, c] * x[t, c])
            want[t, i] = acc
    assert sp.matmat(x).tobytes() == want.tobytes()
    assert sp.matvec(x[3]).tobytes() == want[3].tobytes()


@pytest.mark.parametrize("constant", [8, -8])
def test_mlp_unit_kinds_bit_identical_over_thousands_of_tokens(constant):
    """The native kernel's MLP paths against the reference, bit for bit: units whose up
    row has one entry and two, gates saturated on (>= 17), off (<= -89) and, for a few
    units on some tokens, in between (exp), units sharing gate forms that differ in the
    constant column (scanned from a form's on end: its largest bias first when the
    constant input is positive, its smallest when negative; the batched kernel scans
    each sign of bias from its end by the sign of the input). Every sum has at most two
    nonzero terms and every weight in one is a power of two, so any summation order,
    fused or not, gives the same bits."""
    config = tiny_config(layer_types=["linear_attention"] * 2, num_hidden_layers=2,
                         intermediate_size=80)
    h, n = config.hidden_size, config.intermediate_size
    weights = QwenWeights.zeros(config)
    rng = np.random.default_rng(7)
    emb = np.zeros((config.vocab_size, h), np.float32)
    emb[:, :16] = rng.integers(-2, 3, (config.vocab_size, 16))
    emb[:, 16] = emb[:, 17] = constant  # 16: the gates' shared bias
    weights["model.embed_tokens.weight"] = emb
    for i in range(2):
        gate = np.zeros((n, h), np.float32)
        gate[np.arange(n), rng.integers(0, 16, n)] = rng.choice([-256, -128, 128, 256], n)
        gate[:, 16] = rng.choice([0, 32, -32], n)
        gate[rng.choice(n, 3, replace=False), 16] = 0.0
        gate[rng.choice(n, 3, replace=False)] = 0.0
        between = rng.choice(n, 3, replace=False)
        gate[between] = 0.0
        gate[between, rng.integers(0, 16, 3)] = 0.5
        # two forms off at every token: -64 x with biases 0, 64, 128 (gates -64 x, 0,
        # 64 x; x the constant's normalized value) and 64 x with biases -128, -64, -32
        # (-64 x, 0, 32 x): each on at one end only, the end the constant's sign picks
        # (a scan from the other end would drop them)
        rows = (np.arange(n) * 5) % h  # each unit's down row (below)
        ends = rng.choice(np.setdiff1d(np.flatnonzero(rows < 16), between), 6,
                          replace=False)
        gate[ends] = 0.0
        gate[ends, 17] = [-64.0, -64.0, -64.0, 64.0, 64.0, 64.0]
        gate[ends, 16] = [0.0, 64.0, 128.0, -128.0, -64.0, -32.0]
        up = np.zeros((n, h), np.float32)
        up[np.arange(n), rng.integers(0, 16, n)] = rng.choice([1.0, 2.0, -4.0], n)
        two = rng.random(n) < 0.4
        up[np.flatnonzero(two), rng.integers(20, 30, two.sum())] = 2.0
        down = np.zeros((h, n), np.float32)
        down[rows, np.arange(n)] = rng.choice([-1.0, 0.5, 2.0], n)
        down[:, rng.choice(n, 8, replace=False)] = 0.0  # dead units
        down[16:18] = 0.0  # the constant columns stay constant
        down[rows[ends], ends] = 2.0  # the form's units are live
        for name, value in (("gate", gate), ("up", up), ("down", down)):
            weights[f"model.layers.{i}.mlp.{name}_proj.weight"] = value
    head = np.zeros((config.vocab_size, h), np.float32)
    head[np.arange(config.vocab_size), rng.integers(0, 16, config.vocab_size)] = \
        rng.integers(-3, 4, config.vocab_size)
    weights["lm_head.weight"] = head
    ref, fast = ReferenceEngine(weights), FastEngine(weights)
    single = [fast.plan._layers[i].n_single for i in range(2)] if fast.plan else [0, 0]
    if fast.backend == "native":
        assert all(8 <= s <= n - 16 for s in single), single
    tokens = rng.integers(0, config.vocab_size, 2500)
    s_ref, s_fast = ref.new_state(), fast.new_state()
    a = ref.prefill(s_ref, tokens, mode="recurrent")
    b = fast.prefill(s_fast, tokens)
    np.testing.assert_array_equal(a.view(np.int32), b.view(np.int32))
    assert len(set(a.argmax(1).tolist())) > 10
    state = fast.new_state()
    assert [fast.step_greedy(state, int(t)) for t in tokens[:300]] == a[:300].argmax(1).tolist()
    if fast.backend == "native":  # the batched kernel (its own scan of the forms)
        hidden = {}
        for batched in (False, True):
            state, hidden[batched] = fast.new_state(), np.zeros((640, h), np.float32)
            for start in range(0, 640, 128):
                fast.plan.run_forced(state, tokens[start:start + 128], batched,
                                     hidden[batched][start:start + 128])
                state.position += 128
        assert hidden[True].tobytes() == hidden[False].tobytes()
