"""The per-token kernel's steady conv path (fast_gdn.c) and reused layer results
(fast_memo.c) give the plain path's results bit for bit (logits, greedy tokens,
recurrent and conv states), on a sparse random model whose sums are not exact, over a
token stream whose projection and MLP inputs repeat (layer 0's mixer adds nothing, so
layer 0's MLP and layer 1's projection see a function of the token; the later parts see
the history and rarely repeat) and whose ids come in runs (conv windows go steady),
with the state passed between generation, prefill and the batched teacher-forced kernel
(each rebuilds its tables from the conv state): both the reuse and the compute paths
run, and the counters say how often. Two threads share one plan's tables (one at a time:
the other runs without them) and get the one-thread results."""

import threading

import numpy as np
import pytest

from qgpu.model import fast_native
from qgpu.model.fast import FastEngine

from .hf_util import random_weights, tiny_config
from .test_fast import sparsify

pytestmark = pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")


def engine() -> FastEngine:
    config = tiny_config(layer_types=["linear_attention"] * 3)
    weights = sparsify(random_weights(config, seed=21), 0.3, seed=22)
    weights.tensors["model.layers.0.linear_attn.out_proj.weight"][:] = 0
    for name in list(weights.tensors):
        if "gate_proj" in name:  # most silu(gate) saturate, as compiled
            weights.tensors[name] = weights.tensors[name] * 30.0
    return FastEngine(weights)


def tokens(n: int = 240) -> list[int]:  # 6 ids in runs of 1-6: inputs repeat
    rng = np.random.default_rng(23)
    out: list[int] = []
    while len(out) < n:
        out += [int(rng.choice([3, 7, 11, 12, 40, 90]))] * int(rng.integers(1, 7))
    return out[:n]


def run(eng: FastEngine, toks: list[int]):
    state = eng.new_state()
    logits = eng.prefill(state, toks[:100])
    greedy = [eng.step_greedy(state, t) for t in toks[100:160]]
    greedy += eng.forced_greedy(state, toks[160:200])
    greedy += [eng.step_greedy(state, t) for t in toks[200:]]
    return logits, greedy, state


def same(a, b) -> bool:
    (la, ga, sa), (lb, gb, sb) = a, b
    return la.tobytes() == lb.tobytes() and ga == gb \
        and all(sa.recurrent[i].tobytes() == sb.recurrent[i].tobytes() for i in sa.recurrent) \
        and all(sa.conv[i].tobytes() == sb.conv[i].tobytes() for i in sa.conv)


def test_reuse_is_bit_identical():
    eng = engine()
    lib = eng.plan.lib
    counts = np.zeros(len(fast_native.COUNTERS), np.int64)
    plain = np.zeros(len(fast_native.COUNTERS), np.int64)
    try:
        lib.qgpu_set_memo(0)
        eng.plan.reuse = False
        lib.qgpu_set_counts(plain.ctypes.data)
        off = run(eng, tokens())
        lib.qgpu_set_memo(1)
        eng.plan.reuse = True
        lib.qgpu_set_counts(counts.ctypes.data)
        on = run(eng, tokens())
    finally:
        lib.qgpu_set_counts(None)
        lib.qgpu_set_memo(1)
        eng.plan.reuse = True
    assert same(on, off)
    per = dict(zip(fast_native.COUNTERS, counts.tolist(), strict=True))
    before = dict(zip(fast_native.COUNTERS, plain.tolist(), strict=True))
    # 3 projections and 3 MLPs per token (200 of them per token, 40 forced): layer 1's
    # projection and layer 0's MLP reuse all but the first of each id's inputs; the
    # others compute (mostly)
    assert 150 <= per["proj_reused"] < 3 * 200 and 150 <= per["mlp_reused"] < 3 * 200
    assert per["proj"] > 0 and per["gate"] > 0
    assert before["proj_reused"] == before["mlp_reused"] == 0
    assert per["conv"] < 0.9 * before["conv"]  # steady windows left alone


def test_threads_share_the_tables():
    eng = engine()
    want = run(eng, tokens())
    results = [None] * 4

    def worker(k):
        results[k] = run(eng, tokens())

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(same(r, want) for r in results)
