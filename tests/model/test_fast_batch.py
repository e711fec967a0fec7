"""The batched teacher-forced kernel (fast_batch.c, NativePlan.run_forced(batched=True),
what FastEngine.forced_greedy runs) gives the per-token kernel's results bit for bit:
greedy tokens, each position's residual stream after the last layer, recurrent and conv
states, over chunks of several sizes, on random models whose sums are NOT exact (so a
change of summation order would show: the batch keeps each sum's order), with gates
that saturate or not and rows of zeros. The comparison sees a one-ulp change of one
weight; a plan with a non-finite weight falls back to the per-token kernel."""

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from qgpu.model import fast_native
from qgpu.model.fast import FastEngine
from qgpu.model.fast_plan import NativePlan

from .hf_util import random_weights, tiny_config
from .test_fast import sparsify

pytestmark = pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")


def engine_for(keep: float, gate_scale: float, seed: int = 11,
               zero_dims: bool = False) -> FastEngine:
    config = tiny_config(layer_types=["linear_attention"] * 3)
    weights = sparsify(random_weights(config, seed=seed), keep, seed=seed + 1)
    if zero_dims:  # hidden dims no token sets and few layers write: rows of zeros
        weights.tensors["model.embed_tokens.weight"][:, 1::2] = 0
        weights.tensors["model.embed_tokens.weight"][::3, 1::4] = -0.0  # kept by the plan
        for name in list(weights.tensors):
            if name.endswith(("down_proj.weight", "out_proj.weight")):
                weights.tensors[name][1::4] = 0
    for name in list(weights.tensors):
        if "gate_proj" in name:  # large: most silu(gate) saturate (0 or gate), as compiled
            weights.tensors[name] = weights.tensors[name] * gate_scale
    return FastEngine(weights)


def forced(plan, tokens, chunk: int, batched: bool, state):
    hidden, greedy = [], []
    for a in range(0, len(tokens), chunk):
        part = tokens[a:a + chunk]
        h = np.zeros((len(part), plan.config.hidden_size), np.float32)
        greedy += plan.run_forced(state, part, batched, h).tolist()
        state.position += len(part)
        hidden.append(h)
    return greedy, np.concatenate(hidden)


def same_state(a, b) -> bool:
    return all(a.recurrent[i].tobytes() == b.recurrent[i].tobytes() for i in a.recurrent) \
        and all(a.conv[i].tobytes() == b.conv[i].tobytes() for i in a.conv)


@pytest.mark.parametrize("keep,gate_scale,zero_dims", [(1.0, 1.0, False), (0.3, 1.0, False),
                                                       (0.3, 300.0, False), (0.3, 300.0, True)])
def test_batched_equals_per_token(keep, gate_scale, zero_dims):
    engine = engine_for(keep, gate_scale, zero_dims=zero_dims)
    tokens = np.random.default_rng(13).integers(0, engine.config.vocab_size, 150)
    stepped = engine.new_state()
    greedy = [engine.step_greedy(stepped, int(t)) for t in tokens]
    base_greedy, base_hidden = forced(engine.plan, tokens, 150, False, engine.new_state())
    assert base_greedy == greedy
    for chunk in (1, 7, 64, 150):
        state = engine.new_state()
        got, hidden = forced(engine.plan, tokens, chunk, True, state)
        assert got == greedy
        assert hidden.tobytes() == base_hidden.tobytes()
        assert same_state(state, stepped)
    state = engine.new_state()  # the public path: FastEngine.forced_greedy
    assert engine.forced_greedy(state, tokens.tolist()) == greedy
    assert same_state(state, stepped)


def test_comparison_sees_one_ulp():
    engine = engine_for(0.3, 300.0)
    tokens = np.random.default_rng(14).integers(0, engine.config.vocab_size, 40)
    _, hidden = forced(engine.plan, tokens, 40, True, engine.new_state())
    fields = dict(engine.plan.fields)
    down = np.array(fields["layers.2.down.val"])
    down[0] = np.nextafter(down[0], np.float32(np.inf))
    fields["layers.2.down.val"] = down
    nudged = NativePlan(engine.plan.lib, fields, engine.config)
    _, other = forced(nudged, tokens, 40, True, engine.new_state())
    assert other.tobytes() != hidden.tobytes()


def test_non_finite_weight_runs_per_token():
    engine = engine_for(0.3, 1.0)
    fields = dict(engine.plan.fields)
    up = np.array(fields["layers.1.up_val"])
    up[0] = np.inf
    fields["layers.1.up_val"] = up
    plan = NativePlan(engine.plan.lib, fields, engine.config)
    assert not plan._batch_layers().finite
    tokens = np.random.default_rng(15).integers(0, engine.config.vocab_size, 30)
    a = forced(plan, tokens, 30, True, engine.new_state())
    b = forced(plan, tokens, 30, False, engine.new_state())
    assert a[0] == b[0] and a[1].tobytes() == b[1].tobytes()


def test_non_finite_head_input_takes_the_fallback_row():
    """A final-norm weight of inf makes the head's input non-finite wherever its column
    is nonzero (greedy -1 in the kernel): run_forced without `hidden` writes just those
    positions' rows for the argmax fallback, and the tokens are the per-token kernel's
    (a row left at 0 would give NaN logits everywhere, argmax 0)."""
    engine = engine_for(0.3, 300.0, seed=31)
    fields = dict(engine.plan.fields)
    norm = np.array(fields["final_norm"])
    norm[int(np.asarray(fields["head.head_cols"])[0])] = np.inf
    fields["final_norm"] = norm
    plan = NativePlan(engine.plan.lib, fields, engine.config)
    tokens = np.random.default_rng(32).integers(0, engine.config.vocab_size, 60)
    stepped, want = engine.new_state(), []
    for t in tokens.tolist():
        want.append(int(plan.run(stepped, t, None, want_argmax=True)))
        stepped.position += 1
    assert sum(w != 0 for w in want) > 30
    for chunk in (7, 60):
        state, got = engine.new_state(), []
        for a in range(0, len(tokens), chunk):
            got += plan.run_forced(state, tokens[a:a + chunk]).tolist()
            state.position += len(tokens[a:a + chunk])
        assert got == want


def test_threads_run_forced_passes_of_different_states_at_once():
    """Each thread has its own scratch (and the plan's tables are built once): passes of
    different states in two threads give the sequential results bit for bit."""
    engine = engine_for(0.3, 300.0, seed=21)
    rng = np.random.default_rng(22)
    streams = [rng.integers(0, engine.config.vocab_size, 200) for _ in range(6)]

    def run(tokens):
        state = engine.new_state()
        greedy, hidden = forced(engine.plan, tokens, 64, True, state)
        return greedy, hidden.tobytes(), [state.recurrent[i].tobytes() for i in state.recurrent]

    alone = [run(t) for t in streams]
    engine.plan._batch = None  # built again, by two threads at once
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(pool.map(run, streams))
    assert together == alone


def test_phase_profile_adds_the_kernels_seconds_and_changes_nothing():
    """qgpu_set_batch_profile: each phase's seconds added into the calling thread's buffer
    (what bench_batched_check.py --phases prints), no more than the call's wall time, the
    same tokens as without it, nothing added once it is off."""
    engine = engine_for(0.3, 300.0, seed=41)
    lib, plan = engine.plan.lib, engine.plan
    names = fast_native.batch_phases(lib)
    assert len(names) == len(set(names)) == 14
    tokens = np.random.default_rng(42).integers(0, engine.config.vocab_size, 200)
    plain = plan.run_forced(engine.new_state(), tokens)
    buf = np.zeros(len(names))
    lib.qgpu_set_batch_profile(buf.ctypes.data)
    try:
        start = time.perf_counter()
        timed = plan.run_forced(engine.new_state(), tokens)
        wall = time.perf_counter() - start
    finally:
        lib.qgpu_set_batch_profile(None)
    assert timed.tolist() == plain.tolist()
    assert (buf >= 0).all() and 0 < buf.sum() <= wall
    for name in ("projections", "conv", "recurrence", "gate forms", "units and down", "head"):
        assert buf[names.index(name)] > 0, name
    kept = buf.copy()
    plan.run_forced(engine.new_state(), tokens)
    assert buf.tobytes() == kept.tobytes()
