"""The native kernel's two threads (QGPU_THREADS=2: each split step's parts on two
threads) give the one-thread results bit for bit: logits, greedy tokens, teacher-forced
tokens and states, on a sparse random model whose sums are not exact (so any change of
summation order would show)."""

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
