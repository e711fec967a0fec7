"""model.fast_multi: one generation step of several sequences at once on a `NativePlan`
(`run_multi`): each sequence its own state, one call of the native kernel
(`qgpu_forward_multi`, fast_multi.c) for all of them, so that every layer's weights are
read once per step however many sequences are in flight. The values are the per-token
kernel's (`NativePlan.run`), bit for bit, state by state; what the many-launch
generator (runtime.generate_many) steps."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from qgpu.model.fast_plan import NativePlan
from qgpu.model.state import ModelState


def run_multi(plan: NativePlan, states: Sequence[ModelState], tokens) -> np.ndarray:
    """tokens[t] fed to states[t] (distinct states); returns the greedy next token of each
    (int32 array). The batched kernel runs when every layer weight is finite (its
    bit-identity argument needs it: fast_batch_plan.finite_layers), else `plan.run` state
    by state; either way the same bits. The caller counts the token (state.position)."""
    tokens = np.ascontiguousarray(tokens, np.int64)
    n = len(tokens)
    if len(states) != n or len({id(s) for s in states}) != n:
        raise ValueError("run_multi takes one distinct state per token")
    greedy = np.zeros(n, np.int32)
    if not n:
        return greedy
    tables = plan._batch_layers()
    if not tables.finite:
        return _one_by_one(plan, states, tokens, greedy)
    bindings = [plan._binding(state) for state in states]
    # per row: its states, convs, windows, counts (the window lists, rebuilt where the
    # steady path ran last: model.fast_binding)
    row_tables = [b.window_tables() for b in bindings]
    rows = (ctypes.c_void_p * (4 * n))()
    for k in range(4):
        rows[k * n:(k + 1) * n] = [t[k] for t in row_tables]
    base, size = ctypes.addressof(rows), n * ctypes.sizeof(ctypes.c_void_p)
    hs = np.zeros((n, plan.config.hidden_size), np.float32)
    with plan._scratch() as model:
        if plan.lib.qgpu_forward_multi(model, base, base + size, base + 2 * size,
                                       base + 3 * size, tokens.ctypes.data, n,
                                       hs.ctypes.data, greedy.ctypes.data,
                                       tables.table) != 0:
            return _one_by_one(plan, states, tokens, greedy)  # no scratch: nothing ran
        for binding, state in zip(bindings, states, strict=True):
            binding.position = state.position + 1  # the binding's position after the token
        for t in np.flatnonzero(greedy < 0).tolist():  # not finite: numpy's argmax
            full = np.zeros(plan.config.vocab_size, np.float32)
            plan.lib.qgpu_head_logits_of(model, hs[t].ctypes.data, full.ctypes.data)
            greedy[t] = int(np.argmax(full))
    return greedy


def _one_by_one(plan: NativePlan, states, tokens: np.ndarray, greedy: np.ndarray):
    for t, state in enumerate(states):
        greedy[t] = plan.run(state, int(tokens[t]), None, want_argmax=True)
    return greedy
