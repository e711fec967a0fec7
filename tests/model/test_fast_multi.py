"""Generation of several sequences at once (FastEngine.step_greedy_many, model.fast_multi,
fast_multi.c) gives each sequence the per-token kernel's results bit for bit: every greedy
token and every recurrent and conv state, on random models whose sums are not exact
(a change of summation order would show), with sequences that start at different steps,
run for different lengths and leave the batch, at batch sizes on both sides of the
product's switch from columns to rows (32)."""

import numpy as np
import pytest

from qgpu.model import fast_native
from qgpu.model.fast_multi import lane_store, run_multi
from qgpu.model.fast_plan import NativePlan

from .test_fast_batch import engine_for, same_state

pytestmark = pytest.mark.skipif(fast_native.load_kernel() is None, reason="no C compiler")


def schedule(rng, n_seq: int, vocab: int):
    """Per sequence: the step it joins at and its tokens (random, different lengths)."""
    return [(int(rng.integers(0, 12)), rng.integers(0, vocab, int(rng.integers(1, 40))))
            for _ in range(n_seq)]


def alone(engine, plan):
    """Each sequence stepped by itself (the per-token kernel): greedy tokens, state."""
    out = []
    for _, tokens in plan:
        state = engine.new_state()
        out.append(([engine.step_greedy(state, int(t)) for t in tokens], state))
    return out


def together(engine, plan):
    """All sequences stepped in one batch: each joins at its step, leaves after its last
    token (the rows change from step to step)."""
    states = [engine.new_state() for _ in plan]
    got = [[] for _ in plan]
    step = 0
    while any(len(g) < len(tokens) for g, (_, tokens) in zip(got, plan, strict=True)):
        rows = [k for k, (start, tokens) in enumerate(plan)
                if start <= step and len(got[k]) < len(tokens)]
        if rows:
            out = engine.step_greedy_many([states[k] for k in rows],
                                          [int(plan[k][1][len(got[k])]) for k in rows])
            for k, token in zip(rows, out, strict=True):
                got[k].append(token)
        step += 1
    engine.settle(states)  # the conv arrays back from the lane store
    return got, states


@pytest.mark.parametrize("keep,gate_scale,zero_dims,n_seq", [
    (1.0, 1.0, False, 5), (0.3, 300.0, False, 40), (0.3, 300.0, True, 40)])
def test_many_sequences_equal_one_at_a_time(keep, gate_scale, zero_dims, n_seq):
    engine = engine_for(keep, gate_scale, zero_dims=zero_dims)
    engine.multi_from = 4  # the batched step (FastEngine's default steps one by one)
    plan = schedule(np.random.default_rng(n_seq), n_seq, engine.config.vocab_size)
    want = alone(engine, plan)
    got, states = together(engine, plan)
    for (tokens, state), greedy, batched in zip(want, got, states, strict=True):
        assert greedy == tokens
        assert same_state(batched, state) and batched.position == state.position


def test_generation_feeds_back_its_own_tokens():
    """Greedy generation (each sequence fed its last token), 33 sequences from different
    prompts: FastEngine.generate's tokens and states."""
    engine = engine_for(0.3, 300.0, seed=5)
    engine.multi_from = 4  # the batched step (FastEngine's default steps one by one)
    rng = np.random.default_rng(6)
    prompts = [rng.integers(0, engine.config.vocab_size, int(rng.integers(1, 9))).tolist()
               for _ in range(33)]
    want = []
    for prompt in prompts:
        state = engine.new_state()
        want.append((engine.generate(prompt, 25, state), state))
    states = [engine.new_state() for _ in prompts]
    for state, prompt in zip(states, prompts, strict=True):
        engine.consume(state, prompt[:-1])
    tokens, got = [p[-1] for p in prompts], [[] for _ in prompts]
    for _ in range(25):
        tokens = engine.step_greedy_many(states, tokens)
        for g, t in zip(got, tokens, strict=True):
            g.append(t)
    engine.settle(states)
    for (generated, state), g, s in zip(want, got, states, strict=True):
        assert g == generated and same_state(s, state)


def test_one_ulp_shows_and_non_finite_weight_steps_one_by_one():
    """The comparison sees a one-ulp change of one down weight (of the first layer: the
    next layers' states see it); a plan with a weight of
    inf steps the sequences one by one (plan.run), the same tokens as alone."""
    engine = engine_for(0.3, 300.0, seed=8)
    engine.multi_from = 4  # the batched step (FastEngine's default steps one by one)
    tokens = np.random.default_rng(9).integers(0, engine.config.vocab_size, (30, 6))

    def run(plan):
        states = [engine.new_state() for _ in range(6)]
        out = []
        for row in tokens:
            out.append(run_multi(plan, states, row).tolist())
            for s in states:
                s.position += 1
        lane_store(plan).settle()
        return out, states

    base, base_states = run(engine.plan)
    fields = dict(engine.plan.fields)
    down = np.array(fields["layers.0.down.val"])
    down[0] = np.nextafter(down[0], np.float32(np.inf))
    nudged_states = run(NativePlan(engine.plan.lib, {**fields, "layers.0.down.val": down},
                                   engine.config))[1]
    assert not all(same_state(a, b) for a, b in zip(base_states, nudged_states, strict=True))
    up = np.array(fields["layers.1.up_val"])
    up[0] = np.inf
    plan = NativePlan(engine.plan.lib, {**fields, "layers.1.up_val": up}, engine.config)
    assert not plan._batch_layers().finite
    slow, _ = run(plan)
    states = [engine.new_state() for _ in range(6)]
    want = []
    for row in tokens:
        want.append([int(plan.run(s, int(t), None, True)) for s, t in zip(states, row,
                                                                           strict=True)])
        for s in states:
            s.position += 1
    assert slow == want


def test_a_state_stepped_alone_between_batched_steps_leaves_the_lanes():
    """States step together, then some of them alone (plan.run takes a state out of the
    lane store, its conv arrays current), then together again with newcomers: the tokens
    and states of stepping each alone throughout."""
    engine = engine_for(0.3, 300.0, seed=11)
    engine.multi_from = 4  # the batched step (FastEngine's default steps one by one)
    rng = np.random.default_rng(12)
    tokens = rng.integers(0, engine.config.vocab_size, (3, 20))
    want, got = [engine.new_state() for _ in range(20)], [engine.new_state() for _ in range(20)]
    w_out, g_out = [], []
    for step, row in enumerate(tokens):
        rows = range(20) if step != 1 else range(0, 20, 3)
        if step == 1:
            g_out.append([engine.step_greedy(got[k], int(row[k])) for k in rows])
        else:
            take = list(range(12)) if step == 0 else list(range(20))
            rows = take
            g_out.append(engine.step_greedy_many([got[k] for k in take],
                                                 [int(row[k]) for k in take]))
        w_out.append([engine.step_greedy(want[k], int(row[k])) for k in rows])
    engine.settle(got)
    assert g_out == w_out
    for a, b in zip(want, got, strict=True):
        assert same_state(a, b) and a.position == b.position
