"""runtime.aside: a launch inside text that the text after it does not see.

In one sequence of a merged model a launch leaves three traces the base's text can
notice (docs/merge.md): the base's GDN conv windows of the next 3 text tokens hold the
launch's (near-)zero projections instead of the text before it, the base's attention
caches hold the launch's positions (keys ~0: they take softmax mass), and RoPE distances
grow by the launch's length. Everything else the base keeps (its GDN states are
bit-unchanged by GPU tokens). `Aside` removes the three: before the launch it keeps the
base layers' conv windows and every attention cache's length; after the launch it puts
the conv windows back, crops the attention caches to their length before the launch and
rewinds the position. The circuit layers' recurrent states, where the launch's results
are, stay as the launch left them. The text after the launch then continues exactly the
base's sequence without it (the float32 floor of the merge itself), while the results
remain readable from the state.

    aside = Aside.before(state, circuit_layers)      # qgpu's ModelState
    ... the launch (pads, prompt, trace) ...
    aside.after(state)
For transformers' DynamicCache (`generate()` after the launch continues from it):
    aside = CacheAside.before(cache, circuit_layers); ...; aside.after(cache)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.model.state import ModelState


@dataclass
class Aside:
    position: int
    conv: dict[int, np.ndarray]  # base GDN layers' conv windows before the launch
    lengths: dict[int, int]  # every attention layer's cache length before the launch

    @classmethod
    def before(cls, state: ModelState, circuit_layers: int) -> Aside:
        return cls(state.position,
                   {i: c.copy() for i, c in state.conv.items() if i >= circuit_layers},
                   {i: k.shape[0] for i, k in state.keys.items()})

    def after(self, state: ModelState) -> None:
        for i, c in self.conv.items():
            state.conv[i] = c.copy()
        for i, n in self.lengths.items():
            state.keys[i] = state.keys[i][:n].copy()
            state.values[i] = state.values[i][:n].copy()
        state.position = self.position


_COUNTERS = ("cumulative_length_linear", "cumulative_length")


@dataclass
class CacheAside:
    """The same for transformers' cache (Qwen3.5's DynamicCache: linear-attention layers
    hold conv_states / recurrent_states, attention layers keys / values)."""

    length: int
    conv: dict[int, object]
    # Token counters some transformers versions keep per layer (5.25's linear-attention
    # layers count `cumulative_length_linear`, and the cache's position is read from layer
    # 0, a linear one): rewound with the attention caches, or RoPE would keep the launch.
    counters: dict[tuple[int, str], object]

    @classmethod
    def before(cls, cache, circuit_layers: int) -> CacheAside:
        conv, length, counters = {}, None, {}
        for i, layer in enumerate(cache.layers):
            states = getattr(layer, "conv_states", None)
            if states is not None and i >= circuit_layers and states.get(0) is not None:
                conv[i] = states[0].clone()
            keys = getattr(layer, "keys", None)
            if length is None and keys is not None and keys.numel():
                length = keys.shape[-2]
            for name in _COUNTERS:
                value = getattr(layer, name, None)
                if value is not None:
                    counters[i, name] = value.clone() if hasattr(value, "clone") else value
        return cls(length or 0, conv, counters)

    def after(self, cache) -> None:
        for i, saved in self.conv.items():
            cache.layers[i].conv_states[0] = saved.clone()
        for (i, name), saved in self.counters.items():
            now = getattr(cache.layers[i], name)
            if hasattr(now, "copy_"):
                now.copy_(saved)  # in place: the tensor may be marked as a static address
            else:
                setattr(cache.layers[i], name, saved)
        for layer in cache.layers:
            keys = getattr(layer, "keys", None)
            if keys is not None and keys.numel() and keys.shape[-2] > self.length:
                layer.keys = layer.keys[..., :self.length, :]
                layer.values = layer.values[..., :self.length, :]
