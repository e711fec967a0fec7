"""The native kernel's two threads (QGPU_THREADS=2: each split step's parts on two
threads) give the one-thread results bit for bit: logits, greedy tokens, teacher-forced
tokens and states, on a sparse random model whose sums are not exact (so any change of
summation order would show)."""

import threading

import numpy as np
import pytest

from qgpu.model import fast_native
from qgpu.model.fast import FastEngine

from .hf_util import random_weights, tiny_config
from .test_fast import sparsify

pytestmark = pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")


def run(engine, tokens):
    state = engine.new_state()
    logits = engine.prefill(state, tokens[:30])
    greedy = [engine.step_greedy(state, int(t)) for t in tokens[30:60]]
    forced = engine.forced_greedy(state, tokens[60:])
    return logits, greedy, forced, state


def test_two_threads_bit_identical():
    config = tiny_config(layer_types=["linear_attention"] * 3)
    weights = sparsify(random_weights(config, seed=11), 0.3, seed=12)
    engine = FastEngine(weights)
    assert all(engine.plan._layers[i].form_split > 0 for i in range(3))  # both parts work
    tokens = np.random.default_rng(13).integers(0, config.vocab_size, 90)
    lib = engine.plan.lib
    try:
        lib.qgpu_set_threads(1)
        one = run(engine, tokens)
        lib.qgpu_set_threads(2)
        two = run(engine, tokens)
    finally:
        lib.qgpu_set_threads(fast_native.threads())
    assert one[0].tobytes() == two[0].tobytes()
    assert one[1] == two[1] and one[2] == two[2]
    for i in one[3].recurrent:
        assert one[3].recurrent[i].tobytes() == two[3].recurrent[i].tobytes()


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def test_four_threads_at_once_give_the_sequential_results():
    """Issue 29: threads running one plan at once each get scratch of their own (it was
    shared: two threads segfaulted). Every thread's logits, greedy and forced tokens and
    state equal the same sequence run alone."""
    config = tiny_config(layer_types=["linear_attention"] * 3)
    engine = FastEngine(sparsify(random_weights(config, seed=21), 0.3, seed=22))
    rng = np.random.default_rng(23)
    inputs = [rng.integers(0, config.vocab_size, 90) for _ in range(4)]
    alone = [run(engine, tokens) for tokens in inputs]
    results: list = [None] * 4
    errors: list = []

    def work(i):
        try:
            for _ in range(5):  # several rounds: the calls overlap
                results[i] = run(engine, inputs[i])
        except Exception as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    for one, many in zip(alone, results, strict=True):
        assert one[0].tobytes() == many[0].tobytes()
        assert one[1] == many[1] and one[2] == many[2]
        for i in one[3].recurrent:
            assert one[3].recurrent[i].tobytes() == many[3].recurrent[i].tobytes()


def test_memory_flat_over_1000_launches():
    """Issue 29: a finished sequence's state is not kept alive by the plan (its pointer
    table was kept until 64 piled up: RSS grew by their arrays). States of ~4 MiB each,
    1,000 of them: RSS must not grow by more than a few of them."""
    config = tiny_config(num_hidden_layers=4, layer_types=["linear_attention"] * 4,
                         linear_num_value_heads=16,
                         linear_key_head_dim=64, linear_value_head_dim=64,
                         linear_num_key_heads=4)
    engine = FastEngine(sparsify(random_weights(config, seed=31), 0.3, seed=32))
    tokens = [1, 2, 3]
    engine.generate(tokens, 2)
    before = _rss_mib()
    for _ in range(1000):
        engine.generate(tokens, 2)
    assert len(engine.plan._bindings) <= 1
    assert _rss_mib() - before < 40
