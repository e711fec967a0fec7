"""model.fast: `FastEngine`, the default engine for compiled models.

It computes the reference's function on what can be nonzero (zero rows, dead heads and
units, the all-zero attention layer are never computed), in one of two backends:
- "native": the whole per-token forward pass in one call of a C kernel compiled on first
  use (model.fast_native, model.fast_plan, fast_kernel.c): float32, the reference's
  formulas and operation order (numpy's pairwise sums, numpy's exp algorithm), sparse
  products that skip zero inputs; the greedy token is found from bounds on blocks of the
  output head without computing every logit (`step_greedy`, `generate`; `greedy_run`: a
  run of greedy tokens in one call, up to a token of the caller's stop set); for teacher
  forcing (`forced_greedy`), a run of known tokens goes through the layers in one call
  of the batched kernel (fast_batch.c: each layer's products over all the tokens at
  once, the recurrence position by position; the per-token kernel's bits);
- "numpy": model.fast_numpy, used when no C compiler is available, when the model has a
  full-attention layer that is not all zero, or on request.
Both give bit-identical values and states to the reference wherever the reference's sums
are exact (what the circuit relies on); elsewhere they differ only in summation order.
Both always run the recurrent (per-token) delta rule, also for `prefill`.

`state.recurrent[layer]` is the full [Hv, dk, dv] state as in the reference;
`state.conv[layer]` holds only the live conv channels (`conv_channels(layer)` names them).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from qgpu.model.config import FULL
from qgpu.model.engine import Engine
from qgpu.model.fast_multi import run_multi
from qgpu.model.fast_native import load_kernel
from qgpu.model.fast_numpy import NumpyFastEngine
from qgpu.model.fast_plan import NativePlan
from qgpu.model.state import ModelState
from qgpu.model.weights import QwenWeights

BACKENDS = ("auto", "native", "numpy")
# step_greedy_many steps this many sequences or more with the batched kernel (one pass
# over the weights for all of them), fewer one by one with the per-token kernel and its
# reuse of layer results and steady conv channels (fast_memo.c, per sequence and
# scratch); None: always one by one. Measured on the 2-core development machine at load
# ~1 (benchmarks/bench_batched_generation.py --batched-from), one by one is faster in
# every configuration: the whole suite generated, two jobs, 122 s wall one launch at a
# time per job, 160 s with 64 in flight stepped in turn, 179 s with 64 stepped batched;
# the 64 shortest launches, one job: 975 tokens/s one by one, 483 batched at 32 in
# flight, 802 at 128. The batched step stays, tested bit for bit, for callers that set it
MULTI_FROM: int | None = None


class FastEngine(Engine):
    multi_from = MULTI_FROM   # step_greedy_many's switch to the batched step (None: never)

    def __init__(self, weights: QwenWeights, backend: str = "auto"):
        super().__init__(weights)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")
        c = self.config
        self.attention_layers = [i for i in range(c.num_hidden_layers)
                                 if c.layer_types[i] == FULL
                                 and not weights.layer_is_zero_attention(i)]
        lib = None
        if backend != "numpy" and not self.attention_layers:
            lib = load_kernel()
        if backend == "native" and lib is None:
            raise RuntimeError("the native backend is unavailable (no C compiler, a failed "
                               "build, QGPU_NATIVE=0, or a live full-attention layer)")
        if lib is not None:
            self.backend = "native"
            self.plan = NativePlan.from_weights(lib, weights)
            self.gdn = self.plan.live
            self._numpy = None
        else:
            self.backend = "numpy"
            self.plan = None
            self._numpy = NumpyFastEngine(weights)
            self.gdn = self._numpy.gdn

    @classmethod
    def from_plan(cls, config, fields: dict) -> FastEngine:
        """The native backend over a plan's fields (`NativePlan`; read back from a plan
        file, model.plan_file) without the weights they were built from: what a loaded
        machine runs on. Raises RuntimeError when the kernel is unavailable."""
        lib = load_kernel()
        if lib is None:
            raise RuntimeError("the native backend is unavailable (no C compiler, a failed "
                               "build or QGPU_NATIVE=0)")
        engine = cls.__new__(cls)
        engine.weights, engine.config = None, config
        engine.attention_layers, engine.backend, engine._numpy = [], "native", None
        engine.plan = NativePlan(lib, fields, config)
        engine.gdn = engine.plan.live
        return engine

    def conv_channels(self, layer: int) -> np.ndarray:
        """Which conv channels (rows of the reference's conv state) this engine keeps."""
        return self.gdn[layer].channels

    def new_state(self) -> ModelState:
        if self._numpy is not None:
            return self._numpy.new_state()
        state = ModelState.empty(self.config)
        k = self.config.linear_conv_kernel_dim
        for i, live in self.gdn.items():
            state.conv[i] = np.zeros((len(live.channels), k), np.float32)
        for i in list(state.keys):  # every attention layer is zero: no KV cache
            del state.keys[i], state.values[i]
        return state

    def _forward(self, state: ModelState, ids: np.ndarray, mode: str) -> np.ndarray:
        if self._numpy is not None:
            return self._numpy._forward(state, ids, mode)
        logits = np.zeros((ids.size, self.config.vocab_size), np.float32)
        for t, token in enumerate(ids.tolist()):
            self.plan.run(state, token, logits[t], want_argmax=False)
            state.position += 1
        return logits

    def step_greedy(self, state: ModelState, token: int) -> int:
        """Consume one token; returns the greedy next token (argmax of `step`'s logits)."""
        if self._numpy is not None:
            return super().step_greedy(state, token)
        try:
            checked = 0 <= operator.index(token) < self.config.vocab_size
        except TypeError:
            checked = False
        if not checked:  # the base class's checks and errors (a cheaper test first)
            token = self._check_tokens([token])[0]
        out = self.plan.run(state, int(token), None, want_argmax=True)
        state.position += 1
        return out

    def greedy_run(self, state: ModelState, token: int, stop: np.ndarray,
                   limit: int) -> list[int]:
        """Consume `token`, then each greedy token in turn: the greedy tokens, up to the
        first whose stop[t] is true (a bool or uint8 array over the vocabulary) or
        `limit` of them (what `step_greedy` returns token by token, the same state). The
        native backend's steady path runs the whole run in one kernel call."""
        if stop.shape != (self.config.vocab_size,) or stop.dtype not in (np.bool_, np.uint8):
            raise ValueError(f"stop must be a bool or uint8 array of {self.config.vocab_size} "
                             f"entries, not {stop.dtype} {stop.shape}")
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if self._numpy is not None or not self.plan.reuse:
            out = [self.step_greedy(state, token)]
            while not stop[out[-1]] and len(out) < limit:
                out.append(self.step_greedy(state, out[-1]))
            return out
        token = self._check_tokens([token])[0]
        out = self.plan.run_greedy(state, int(token), np.ascontiguousarray(stop, np.uint8),
                                   limit)
        state.position += len(out)
        return out

    def forced_greedy(self, state: ModelState, tokens: Sequence[int]) -> list[int]:
        """Teacher forcing: consume the given tokens; returns the greedy token after each
        (what `step_greedy` returns token by token, the same values and state). The native
        backend runs them in one call of the batched kernel (NativePlan.run_forced)."""
        if self._numpy is not None:
            return [super(FastEngine, self).step_greedy(state, t) for t in tokens]
        ids = self._check_tokens(tokens)
        out = self.plan.run_forced(state, ids)
        state.position += len(ids)
        return out.tolist()

    def step_greedy_many(self, states: Sequence[ModelState], tokens: Sequence[int]) -> list[int]:
        """One token into each of several states (distinct: independent sequences);
        returns the greedy next token of each, what `step_greedy` returns state by state
        (the same values and states, bit for bit). From `multi_from` states on (None, the
        default: never; see MULTI_FROM) the native backend steps them in one call
        (model.fast_multi: each layer's weights read once for all of them), the states'
        conv windows side by side in a lane store: their own conv arrays are current
        after `settle` or any other step of the state."""
        if self._numpy is not None or self.multi_from is None \
                or len(states) < self.multi_from:
            return [self.step_greedy(s, t) for s, t in zip(states, tokens, strict=True)]
        ids = self._check_tokens(tokens)
        out = run_multi(self.plan, states, ids)
        for state in states:
            state.position += 1
        return out.tolist()

    def settle(self, states: Sequence[ModelState]) -> None:
        """The states' conv arrays current again (the many-sequence step keeps them in a
        lane store: model.fast_multi); any other step of a state does this by itself."""
        store = None if self._numpy is not None else getattr(self.plan.lanes, "store", None)
        if store is not None:   # none until a batched step ran in this thread
            store.settle(states)

    def consume(self, state: ModelState, tokens: Sequence[int]) -> None:
        """Feed tokens without computing their logits (a prompt whose answers are not read)."""
        if self._numpy is not None:
            self.prefill(state, tokens, mode="recurrent")
            return
        for token in self._check_tokens(tokens).tolist():
            self.plan.run(state, token, None, want_argmax=False)
            state.position += 1

    def generate(self, prompt: Sequence[int], max_new_tokens: int,
                 state: ModelState | None = None, mode: str = "recurrent",
                 stop: Sequence[int] = ()) -> list[int]:
        """Greedy decoding as Engine.generate (the recurrent rule whatever `mode` says),
        without computing any logit row in full."""
        state = self.new_state() if state is None else state
        prompt = list(prompt)
        if not prompt or max_new_tokens <= 0:
            return super().generate(prompt, max_new_tokens, state, "recurrent", stop)
        self.consume(state, prompt[:-1])
        out: list[int] = []
        token = self.step_greedy(state, prompt[-1])
        while True:
            out.append(token)
            if token in stop or len(out) == max_new_tokens:
                return out
            token = self.step_greedy(state, token)
