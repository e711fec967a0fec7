"""model.engine: the interface every engine shares (step, prefill, consume, greedy
generation, teacher forcing).

A runtime drives an engine token by token:
    state = engine.new_state()
    logits = engine.prefill(state, prompt)[-1]      # or engine.step(state, token)
    token = engine.greedy(logits)
and reads results from `state.recurrent[layer]` ([Hv, dk, dv] per GDN layer).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qgpu.errors import QgpuError
from qgpu.model.state import ModelState
from qgpu.model.weights import QwenWeights


class TokenError(QgpuError):
    """A token id outside the model's vocabulary."""


class Engine:
    """Base of ReferenceEngine and FastEngine: subclasses implement `_forward`."""

    def __init__(self, weights: QwenWeights):
        self.weights = weights
        self.config = weights.config

    def new_state(self) -> ModelState:
        return ModelState.empty(self.config)

    def _check_tokens(self, tokens: Sequence[int]) -> np.ndarray:
        ids = np.asarray(tokens, dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.config.vocab_size):
            bad = ids[(ids < 0) | (ids >= self.config.vocab_size)][0]
            raise TokenError(f"token id {bad} is outside the vocabulary "
                             f"(0..{self.config.vocab_size - 1})")
        return ids

    def step(self, state: ModelState, token: int) -> np.ndarray:
        """Consume one token (recurrent path); returns its logits [vocab]."""
        return self._forward(state, self._check_tokens([token]), "recurrent")[0]

    def prefill(self, state: ModelState, tokens: Sequence[int],
                mode: str = "chunked") -> np.ndarray:
        """Consume several tokens at once; returns logits [T, vocab]. mode "chunked" is
        transformers' prompt path (chunks of 64), "recurrent" its per-token decode path."""
        if mode not in ("chunked", "recurrent"):
            raise ValueError(f"mode must be 'chunked' or 'recurrent', not {mode!r}")
        ids = self._check_tokens(tokens)
        if ids.size == 0:
            return np.zeros((0, self.config.vocab_size), np.float32)
        return self._forward(state, ids, mode)

    def step_greedy(self, state: ModelState, token: int) -> int:
        """Consume one token; returns the greedy next token. Engines that can find the
        argmax without every logit (FastEngine) override it."""
        return self.greedy(self.step(state, token))

    def step_greedy_many(self, states: Sequence[ModelState], tokens: Sequence[int]) -> list[int]:
        """One token into each of several states (independent sequences); the greedy next
        token of each. Engines that step them together (FastEngine) override it."""
        return [self.step_greedy(s, t) for s, t in zip(states, tokens, strict=True)]

    def settle(self, states: Sequence[ModelState]) -> None:
        """Make the states' own arrays current after step_greedy_many (FastEngine steps
        conv states elsewhere meanwhile: model.fast_multi); here they always are."""

    def consume(self, state: ModelState, tokens: Sequence[int]) -> None:
        """Feed tokens whose logits are not read (a prompt), on the recurrent path.
        FastEngine skips the output head for them."""
        self.prefill(state, tokens, mode="recurrent")

    def forced_greedy(self, state: ModelState, tokens: Sequence[int]) -> list[int]:
        """Teacher forcing: feed the given tokens; the greedy token after each (what
        `step_greedy` returns token by token). FastEngine runs them layer by layer."""
        return [self.step_greedy(state, t) for t in tokens]

    @staticmethod
    def greedy(logits: np.ndarray) -> int:
        """argmax, first index on ties (as torch.argmax)."""
        return int(np.argmax(logits))

    def generate(self, prompt: Sequence[int], max_new_tokens: int,
                 state: ModelState | None = None, mode: str = "chunked",
                 stop: Sequence[int] = ()) -> list[int]:
        """Greedy decoding: prefill the prompt, then feed each argmax back. Returns the new
        tokens (stopping after a token in `stop`)."""
        state = self.new_state() if state is None else state
        logits = self.prefill(state, prompt, mode)[-1]
        out: list[int] = []
        for _ in range(max_new_tokens):
            token = self.greedy(logits)
            out.append(token)
            if token in stop or len(out) == max_new_tokens:
                break
            logits = self.step(state, token)
        return out

    def _forward(self, state: ModelState, ids: np.ndarray, mode: str) -> np.ndarray:
        raise NotImplementedError
