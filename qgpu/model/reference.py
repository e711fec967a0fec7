"""model.reference: `ReferenceEngine`, the dense numpy Qwen3.5 decoder, a line-by-line
mirror of transformers' forward pass. It is the oracle for the fast engine and for the
circuit primitives; speed is not its concern.

An optional `observer(layer, site, array)` sees every layer's intermediate values
(sites: "residual_in", "mixer_out", "mlp_in", "mlp_gate", "mlp_up", "mlp_out"), which is
how instrumented runs (the circuit's margin report) look inside.

Sparse weights (model.weights) are densified here, tensor by tensor, when a forward pass
first needs them; dense copies are kept up to `dense_cache_bytes` (default 2 GiB) and
rebuilt when the tensor changed, the rest densified again on every pass.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qgpu.model import layers
from qgpu.model.engine import Engine
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.state import ModelState
from qgpu.model.weights import EMBED, FINAL_NORM, QwenWeights, layer_prefix

Observer = Callable[[int, str, np.ndarray], None]
DENSE_CACHE_BYTES = 2 << 30


class ReferenceEngine(Engine):
    def __init__(self, weights: QwenWeights, observer: Observer | None = None,
                 dense_cache_bytes: int = DENSE_CACHE_BYTES):
        super().__init__(weights)
        self.observer = observer
        self.dense_cache_bytes = dense_cache_bytes
        self._dense: dict[str, tuple[SparseTensor, int, np.ndarray]] = {}

    def _tensor(self, name: str) -> np.ndarray:
        """A weight as a dense array (sparse ones densified, cached within the budget)."""
        t = self.weights[name]
        if not isinstance(t, SparseTensor):
            return t
        hit = self._dense.get(name)
        if hit is not None and hit[0] is t and hit[1] == t.version:
            return hit[2]
        dense = t.todense()
        self._dense.pop(name, None)
        if sum(v[2].nbytes for v in self._dense.values()) + dense.nbytes \
                <= self.dense_cache_bytes:
            self._dense[name] = (t, t.version, dense)
        return dense

    def _layer(self, i: int, name: str) -> np.ndarray:
        return self._tensor(layer_prefix(i) + name)

    def _see(self, layer: int, site: str, value: np.ndarray) -> None:
        if self.observer is not None:
            self.observer(layer, site, value)

    def _forward(self, state: ModelState, ids: np.ndarray, mode: str) -> np.ndarray:
        return self._final(state, ids, mode) @ self._tensor(self.weights.head_name).T

    def _final(self, state: ModelState, ids: np.ndarray, mode: str) -> np.ndarray:
        """The final norm's output [T, hidden] (what the head reads)."""
        c, w = self.config, self.weights
        h = w[EMBED][ids]
        positions = np.arange(state.position, state.position + ids.size)
        for i in range(c.num_hidden_layers):
            self._see(i, "residual_in", h)
            x = layers.rms_norm(h, self._layer(i, "input_layernorm.weight"), c.rms_norm_eps)
            if w.layer_is_linear(i):
                mixed = self.gdn_mixer(i, x, state, mode)
            else:
                mixed = self.attention_mixer(i, x, state, positions)
            self._see(i, "mixer_out", mixed)
            h = h + mixed
            u = layers.rms_norm(h, self._layer(i, "post_attention_layernorm.weight"),
                                c.rms_norm_eps)
            gate = u @ self._layer(i, "mlp.gate_proj.weight").T
            up = u @ self._layer(i, "mlp.up_proj.weight").T
            self._see(i, "mlp_in", u)
            self._see(i, "mlp_gate", gate)
            self._see(i, "mlp_up", up)
            out = (layers.silu(gate) * up) @ self._layer(i, "mlp.down_proj.weight").T
            self._see(i, "mlp_out", out)
            h = h + out
        state.position += ids.size
        return layers.rms_norm(h, self._tensor(FINAL_NORM), c.rms_norm_eps)

    def gdn_mixer(self, i: int, x: np.ndarray, state: ModelState, mode: str) -> np.ndarray:
        c = self.config
        t = x.shape[0]
        hk, hv = c.linear_num_key_heads, c.linear_num_value_heads
        dk, dv = c.linear_key_head_dim, c.linear_value_head_dim
        mixed_qkv = x @ self._layer(i, "linear_attn.in_proj_qkv.weight").T
        z = (x @ self._layer(i, "linear_attn.in_proj_z.weight").T).reshape(t, hv, dv)
        b = x @ self._layer(i, "linear_attn.in_proj_b.weight").T
        a = x @ self._layer(i, "linear_attn.in_proj_a.weight").T
        qkv, state.conv[i] = layers.causal_conv(state.conv[i], mixed_qkv,
                                           self._layer(i, "linear_attn.conv1d.weight"))
        q = qkv[:, :c.key_dim].reshape(t, hk, dk)
        k = qkv[:, c.key_dim:2 * c.key_dim].reshape(t, hk, dk)
        v = qkv[:, 2 * c.key_dim:].reshape(t, hv, dv)
        beta = layers.sigmoid(b)
        g = layers.decay_log(a, self._layer(i, "linear_attn.A_log"),
                        self._layer(i, "linear_attn.dt_bias"))
        rep = c.value_heads_per_key_head
        q, k = layers.repeat_key_heads(q, rep), layers.repeat_key_heads(k, rep)
        rule = layers.gdn_chunked if mode == "chunked" else layers.gdn_recurrent
        o = rule(q, k, v, g, beta, state.recurrent[i])
        y = layers.rms_norm_gated(o, z, self._layer(i, "linear_attn.norm.weight"), c.rms_norm_eps)
        return y.reshape(t, c.value_dim) @ self._layer(i, "linear_attn.out_proj.weight").T

    def attention_mixer(self, i: int, x: np.ndarray, state: ModelState,
                        positions: np.ndarray) -> np.ndarray:
        c = self.config
        t, nh, nkv, hd = x.shape[0], c.num_attention_heads, c.num_key_value_heads, c.head_dim
        q_and_gate = (x @ self._layer(i, "self_attn.q_proj.weight").T).reshape(t, nh, 2 * hd)
        q, gate = q_and_gate[..., :hd], q_and_gate[..., hd:].reshape(t, nh * hd)
        q = layers.rms_norm(q, self._layer(i, "self_attn.q_norm.weight"), c.rms_norm_eps)
        k = (x @ self._layer(i, "self_attn.k_proj.weight").T).reshape(t, nkv, hd)
        k = layers.rms_norm(k, self._layer(i, "self_attn.k_norm.weight"), c.rms_norm_eps)
        v = (x @ self._layer(i, "self_attn.v_proj.weight").T).reshape(t, nkv, hd)
        cos, sin = layers.rope_tables(positions, c.rotary_dim, c.rope_theta)
        q, k = layers.apply_rope(q, cos, sin), layers.apply_rope(k, cos, sin)
        state.keys[i] = np.concatenate([state.keys[i], k])
        state.values[i] = np.concatenate([state.values[i], v])
        out = layers.attention(q, state.keys[i], state.values[i], positions, hd ** -0.5)
        out = out.reshape(t, nh * hd) * layers.sigmoid(gate)
        return out @ self._layer(i, "self_attn.o_proj.weight").T
