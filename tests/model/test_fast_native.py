"""The native backend of FastEngine (fast_native, fast_plan, fast_kernel.c): numpy's exp
and pairwise sums reproduced bit for bit, bit-identical logits and states on exact
circuits, the reference's values to float32 rounding on dense random GDN models, an
argmax over the output head's bounds equal to np.argmax of the full logits, and the
fallbacks."""


import numpy as np
import pytest

from qgpu.examples.table_machine import build_table_machine
from qgpu.model import layers
from qgpu.model.fast import FastEngine
from qgpu.model.fast_native import exp_probe, kernel_exp, kernel_silu, kernel_sumsq, load_kernel
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights

from .hf_util import random_weights, tiny_config

lib = load_kernel()
pytestmark = pytest.mark.skipif(lib is None, reason="no C compiler: native kernel unavailable")

ALL_GDN = ["linear_attention", "linear_attention", "full_attention"]


def test_kernel_exp_and_sums_are_numpys():
    x = exp_probe()
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x)
    np.testing.assert_array_equal(kernel_exp(lib, x).view(np.int32), want.view(np.int32))
    rng = np.random.default_rng(3)
    for n in (1, 7, 8, 9, 127, 128, 129, 1000, 1024, 4096, 4099):
        v = (rng.normal(size=n) * rng.uniform(0.01, 100)).astype(np.float32)
        assert kernel_sumsq(lib, v) == np.sum(v * v, dtype=np.float32), n


def test_kernel_silu_is_numpys():
    """The kernel's silu over arrays (16 or 8 lanes at a time where it can) gives
    layers.silu's bits, on exp's probes, both signs, the saturation edges, zeros, NaN and
    +inf, in every position of a group of 16 (not -inf: the kernel's silu(-inf) is -0,
    numpy's NaN, in the scalar code as in the vector code)."""
    x = exp_probe()
    edges = np.array([17.0, np.nextafter(17.0, 0), -89.0, np.nextafter(-89.0, 0), 0.0, -0.0,
                      88.7228, -88.7228, -88.8, np.inf, np.nan, 1.0, -1.0, 2.0 ** -20],
                     np.float32)
    rng = np.random.default_rng(5)
    for v in (x, -x, np.resize(edges, 1003), rng.permutation(np.resize(edges, 64)),
              rng.permutation(np.resize(edges, 16 * len(edges))),
              np.concatenate([rng.uniform(-100, 30, 4099).astype(np.float32), edges])):
        v = np.asarray(v, np.float32)
        want = layers.silu(v)
        np.testing.assert_array_equal(kernel_silu(lib, v).view(np.int32), want.view(np.int32))


def test_table_machine_states_bit_identical_to_reference():
    """Every row is written before it is read: the table reads and the states are exact
    and must be equal bit for bit (the table machine's final norm is not an exact
    identity, so its logits agree to rounding only; test_exact_stack_bit_identical covers
    logits)."""
    machine = build_table_machine(rows=16, bits=3, copies=3, head_dim=16, gdn_layers=2)
    rng = np.random.default_rng(4)
    tokens = [machine.write(a, int(rng.integers(8))) for a in range(16)]
    for _ in range(104):
        a = int(rng.integers(16))
        tokens.append(machine.write(a, int(rng.integers(8))) if rng.random() < 0.5
                      else machine.read(a, int(rng.integers(3))))
    ref, fast = ReferenceEngine(machine.weights), FastEngine(machine.weights)
    assert fast.backend == "native"
    s_ref, s_fast = ref.new_state(), fast.new_state()
    a = ref.prefill(s_ref, tokens[:100], mode="recurrent")
    b = fast.prefill(s_fast, tokens[:100])
    assert np.abs(a - b).max() <= 1e-6 * np.abs(a).max()
    assert a.argmax(1).tolist() == b.argmax(1).tolist()
    for t in tokens[100:]:
        assert ref.greedy(ref.step(s_ref, t)) == fast.step_greedy(s_fast, t)
    for i, S in s_ref.recurrent.items():
        np.testing.assert_array_equal(S, s_fast.recurrent[i])
        np.testing.assert_array_equal(s_ref.conv[i][fast.conv_channels(i)], s_fast.conv[i])
    assert fast.generate(tokens[:5], 12) == ref.generate(tokens[:5], 12, mode="recurrent")


@pytest.mark.slow
def test_exact_stack_bit_identical():
    """The benchmark's register machine (benchmarks/bench_model.py, one GDN layer at 2B
    shapes, exact everywhere): logits and states equal bit for bit, answers right."""
    from benchmarks.bench_model import answers, build_bench_model

    weights = build_bench_model(gdn_layers=1, extra=512)
    ref, fast = ReferenceEngine(weights), FastEngine(weights)
    tokens = np.random.default_rng(9).integers(0, weights.config.vocab_size, 6).tolist()
    s_ref, s_fast = ref.new_state(), fast.new_state()
    a = ref.prefill(s_ref, tokens, mode="recurrent")
    np.testing.assert_array_equal(a, fast.prefill(s_fast, tokens))
    assert a.argmax(1).tolist() == answers(weights, tokens)
    np.testing.assert_array_equal(s_ref.recurrent[0], s_fast.recurrent[0])
    chain = [answers(weights, tokens)[-1]]  # each answer depends on its token only
    while len(chain) < 4:
        chain.append(answers(weights, [chain[-1]])[0])
    assert fast.generate(tokens, 4) == chain == ref.generate(tokens, 4, mode="recurrent")


def test_dense_random_gdn_model_matches_reference():
    """Every path of the layer math (conv taps, decay, grouped heads, dense keys, silu
    and sigmoid off saturation) against the reference, to float32 rounding."""
    config = tiny_config(layer_types=ALL_GDN)
    weights = random_weights(config, seed=7)
    weights["model.layers.2.self_attn.o_proj.weight"] = np.zeros((64, 64), np.float32)
    ref, fast = ReferenceEngine(weights), FastEngine(weights)
    assert fast.backend == "native"
    tokens = np.random.default_rng(8).integers(0, config.vocab_size, 40)
    s_ref, s_fast = ref.new_state(), fast.new_state()
    a = ref.prefill(s_ref, tokens, mode="recurrent")
    b = fast.prefill(s_fast, tokens)
    assert np.abs(a - b).max() < 1e-5 * np.abs(a).max()
    for i, S in s_ref.recurrent.items():
        assert np.abs(S - s_fast.recurrent[i]).max() < 1e-5
    copy = s_fast.copy()  # a copied state has its own arrays: both continue alike
    np.testing.assert_array_equal(fast.step(copy, 5), fast.step(s_fast, 5))


def head_test_weights(seed):
    """No live layer; the head has duplicate rows (ties), all-zero rows, negative rows,
    and block structure like value tokens."""
    config = tiny_config(layer_types=ALL_GDN, vocab_size=3000, hidden_size=64)
    w = QwenWeights.zeros(config)
    rng = np.random.default_rng(seed)
    w[EMBED] = rng.normal(size=(3000, 64)).astype(np.float32)
    head = np.zeros((3000, 64), np.float32)
    values = np.arange(2048)
    head[:2048, :11] = 2 * ((values[:, None] >> np.arange(11)) & 1) - 1
    head[2048:2600, 11:40] = rng.normal(size=(552, 29)) * (rng.random((552, 29)) < 0.3)
    head[2600:2700] = head[2100:2200]  # ties: the earlier row must win
    head[2900:] = -np.abs(rng.normal(size=(100, 64)))
    w[LM_HEAD] = head
    return w


@pytest.mark.parametrize("seed", [0, 1])
def test_head_argmax_equals_full_argmax(seed):
    w = head_test_weights(seed)
    fast = FastEngine(w)
    a, b = fast.new_state(), fast.new_state()
    for t in range(0, 3000, 7):
        assert fast.step_greedy(a, t) == int(np.argmax(fast.step(b, t))), t


def test_head_argmax_with_only_negative_rows_picks_first_zero_row():
    w = head_test_weights(2)
    head = np.zeros_like(w[LM_HEAD])
    head[:5] = -1.0
    head[7:] = -2.0
    head[:, 0] = np.where(head[:, 0] != 0, head[:, 0], 0)
    w[LM_HEAD] = head
    w[EMBED] = np.abs(w[EMBED])
    fast = FastEngine(w)
    assert fast.step_greedy(fast.new_state(), 3) == 5


def test_fallbacks_to_numpy():
    weights = random_weights(tiny_config(), seed=1)  # a live full-attention layer
    assert FastEngine(weights).backend == "numpy"
    table = build_table_machine()
    forced = FastEngine(table.weights, backend="numpy")
    assert forced.backend == "numpy"
    with pytest.raises(ValueError):
        FastEngine(table.weights, backend="gpu")
