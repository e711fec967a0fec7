"""model.fast_multi: one generation step of several sequences at once on a `NativePlan`
(`run_multi`): each sequence its own state, one call of the native kernel
(`qgpu_forward_multi`, fast_multi.c) for all of them, so that every layer's weights are
read once per step however many sequences are in flight. The values are the per-token
kernel's (`NativePlan.run`), bit for bit, state by state; what the many-launch
generator (runtime.generate_many) steps.

The sequences' conv windows are stepped side by side in a `LaneStore` (per GDN layer one
array [channel, K, lane]: a channel's windows of all sequences in one run of memory,
where one state per sequence scattered them over ~1 MB each). A state's conv arrays are
moved in when it joins a step and back when it leaves the store; meanwhile the
ModelState's own conv arrays are stale. It leaves when a step goes without it, when any
other kernel path of the plan is given it (NativePlan._binding), or on
`LaneStore.settle` (what FastEngine.settle, and so the many-launch generator for a
launch that ended, calls)."""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from qgpu.model.fast_plan import NativePlan
from qgpu.model.state import ModelState

LANE_ALIGN = 16     # lanes per store row, a multiple of one AVX-512 vector


class LaneStore:
    """The conv states of the sequences a plan steps together, lane by lane (see the
    module docstring): lane t holds the state stepped as row t. One per plan and thread
    (`lane_store`): threads step their own batches."""

    def __init__(self, layers: Sequence[int]):
        self.wanted = list(layers)              # the plan's GDN layers with live heads
        self.pitch = 0
        self.arrays: dict[int, np.ndarray] = {}  # layer -> [channels, K, pitch]
        # per layer: channels whose window holds a nonzero in some lane (a superset is
        # harmless: the kernel clears a flag it finds all zero)
        self.flags: dict[int, np.ndarray] = {}
        self.lanes: list[ModelState] = []
        self.index: dict[int, int] = {}         # id(state) -> lane

    def _grow(self, lanes: int, like: ModelState) -> None:
        pitch = -(-lanes // LANE_ALIGN) * LANE_ALIGN
        old, self.arrays = self.arrays, {}
        for i in self.wanted:
            if i not in like.conv:
                continue
            n, k = like.conv[i].shape
            a = np.zeros((n, k, pitch), np.float32)
            if i in old:
                a[:, :, :self.pitch] = old[i]
            self.arrays[i] = a
            self.flags.setdefault(i, np.zeros(n, np.uint8))
        self.pitch = pitch

    def tables(self, n_layers: int) -> tuple[ctypes.Array, ctypes.Array]:
        stores = (ctypes.c_void_p * n_layers)()
        flags = (ctypes.c_void_p * n_layers)()
        for i, a in self.arrays.items():
            stores[i] = a.ctypes.data
            flags[i] = self.flags[i].ctypes.data
        return stores, flags

    def holds(self, state: ModelState) -> bool:
        return id(state) in self.index

    def arrange(self, states: Sequence[ModelState]) -> list[int]:
        """Make `states` exactly the store's lanes (those not among them leave, newcomers
        move in); returns the lane of each of states."""
        wanted = {id(s) for s in states}
        for state in [s for s in self.lanes if id(s) not in wanted]:
            self.leave(state)
        if states and len(states) > self.pitch:
            self._grow(len(states), states[0])
        for state in states:
            if id(state) not in self.index:
                lane = self.index[id(state)] = len(self.lanes)
                self.lanes.append(state)
                for i, a in self.arrays.items():
                    conv = state.conv[i]
                    a[:, :, lane] = conv
                    self.flags[i] |= np.any(conv != 0, axis=1)
        return [self.index[id(s)] for s in states]

    def leave(self, state: ModelState) -> None:
        """The state's conv windows back into its arrays; the last lane fills its place."""
        lane = self.index.pop(id(state))
        last = len(self.lanes) - 1
        for i, a in self.arrays.items():
            state.conv[i][...] = a[:, :, lane]
            a[:, :, lane] = a[:, :, last]
            a[:, :, last] = 0
        moved = self.lanes.pop()
        if lane != last:
            self.lanes[lane] = moved
            self.index[id(moved)] = lane

    def settle(self, states: Sequence[ModelState] | None = None) -> None:
        """`states` (default: every one) back into their own arrays."""
        for state in list(self.lanes if states is None else states):
            if self.holds(state):
                self.leave(state)


def lane_store(plan: NativePlan) -> LaneStore:
    """This thread's lane store on the plan (kept in plan.lanes, a threading.local, where
    NativePlan._binding finds it to take a state out before another path runs it)."""
    store = getattr(plan.lanes, "store", None)
    if store is None:
        store = plan.lanes.store = LaneStore(sorted(plan.live))
    return store


def run_multi(plan: NativePlan, states: Sequence[ModelState], tokens) -> np.ndarray:
    """tokens[t] fed to states[t] (distinct states); returns the greedy next token of each
    (int32 array). The batched kernel runs when every layer weight is finite (its
    bit-identity argument needs it: fast_batch_plan.finite_layers), else `plan.run` state
    by state; either way the same bits. The caller counts the token (state.position).
    The states stay in this thread's lane store after the step (see the module
    docstring)."""
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
    bindings = [plan._binding(state, in_lanes=True) for state in states]
    store = lane_store(plan)
    lanes = store.arrange(states)
    order = np.argsort(lanes)                  # row t is lane t
    rows = (ctypes.c_void_p * n)()
    rows[:] = [bindings[k].states for k in order.tolist()]
    stores, flags = store.tables(plan.config.num_hidden_layers)
    row_tokens = np.ascontiguousarray(tokens[order])
    row_greedy = np.zeros(n, np.int32)
    hs = np.zeros((n, plan.config.hidden_size), np.float32)
    with plan._scratch() as model:
        if plan.lib.qgpu_forward_multi(model, ctypes.addressof(rows), ctypes.addressof(stores),
                                       ctypes.addressof(flags), store.pitch,
                                       row_tokens.ctypes.data, n, hs.ctypes.data,
                                       row_greedy.ctypes.data, tables.table) != 0:
            return _one_by_one(plan, states, tokens, greedy)  # no scratch: nothing ran
        for binding, state in zip(bindings, states, strict=True):
            binding.position = state.position + 1  # the binding's position after the token
            binding.conv_moved()
        for t in np.flatnonzero(row_greedy < 0).tolist():  # not finite: numpy's argmax
            full = np.zeros(plan.config.vocab_size, np.float32)
            plan.lib.qgpu_head_logits_of(model, hs[t].ctypes.data, full.ctypes.data)
            row_greedy[t] = int(np.argmax(full))
    greedy[order] = row_greedy
    return greedy


def _one_by_one(plan: NativePlan, states, tokens: np.ndarray, greedy: np.ndarray):
    for t, state in enumerate(states):
        greedy[t] = plan.run(state, int(tokens[t]), None, want_argmax=True)
    return greedy
