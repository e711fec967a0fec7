"""model.fast_numpy: `NumpyFastEngine`, the sparse executor in numpy. `FastEngine`
(model.fast) uses it where the native kernel is unavailable or the model has a live
full-attention layer; `live_gdn_heads` (which heads and conv channels are live) is shared
by both.

It computes the reference's function (same layers.py formulas, float32) but only on what
can be nonzero:
- projections, MLPs and the output head are `SparseRows` (zero rows never computed),
  built from the weights' nonzero entries (`QwenWeights.csr`: sparse tensors are not
  scanned densely);
- a GDN value head whose value projection is all zero keeps an all-zero state and reads
  0, so it is skipped; a full-attention layer whose o_proj is zero adds exactly 0 and is
  skipped (its KV cache is not kept);
- the delta rule touches only the state rows where the key (for the write) or the query
  (for the read) is nonzero, and decays only heads whose decay is not exactly 1.
Where the reference's sums are exact (every term an integer or a dyadic value within
2^24 ulps: what the circuit relies on), both engines give bit-identical values and
states; elsewhere they differ only by summation order (fp32 rounding).

An optional `observer(layer, site, array)` sees, per layer, the residual before the layer
("residual_in"; layer n_layers: the final residual), after the mixer ("residual_mid"),
the MLP's normed input ("mlp_in") and the gate pre-activations of the live units
("mlp_gate_live", columns in the order of `mlp_units(layer)`): views of arrays the
engine updates in place, valid only during the call (analysis.margins reads them).

The fast engine always runs the recurrent (per-token) delta rule, also for `prefill`;
projections are batched over the prompt. `state.recurrent[layer]` is the full
[Hv, dk, dv] state as in the reference; `state.conv[layer]` holds only the live conv
channels (`conv_channels(layer)` names them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.model import layers
from qgpu.model.config import LINEAR
from qgpu.model.csr import Csr
from qgpu.model.engine import Engine
from qgpu.model.reference import Observer, ReferenceEngine
from qgpu.model.sparse import SparseRows
from qgpu.model.state import ModelState
from qgpu.model.weights import EMBED, FINAL_NORM, QwenWeights

F32 = np.float32


@dataclass
class LiveHeads:
    """The live part of a GDN layer: value heads whose v projection is nonzero."""

    heads: np.ndarray  # live value heads
    key_slot: np.ndarray  # for each live value head, its row in the live key heads
    key_heads: np.ndarray  # live key heads
    channels: np.ndarray  # live conv channels (q of live key heads, k, v of live heads)
    n_qk: int  # live key heads * dk
    z_rows: np.ndarray  # z rows (and out_proj columns) of the live heads


def live_gdn_heads(weights: QwenWeights, i: int) -> LiveHeads:
    c = weights.config
    dk, dv, rep = c.linear_key_head_dim, c.linear_value_head_dim, c.value_heads_per_key_head
    qkv = weights.layer_csr(i, "linear_attn.in_proj_qkv.weight")
    v_rows = qkv.counts[2 * c.key_dim:].reshape(c.linear_num_value_heads, dv)
    heads = np.flatnonzero(v_rows.sum(axis=1))
    key_heads, key_slot = np.unique(heads // rep, return_inverse=True)
    q_ch = (key_heads[:, None] * dk + np.arange(dk)).ravel()
    v_ch = (2 * c.key_dim + heads[:, None] * dv + np.arange(dv)).ravel()
    channels = np.concatenate([q_ch, c.key_dim + q_ch, v_ch])
    z_rows = (heads[:, None] * dv + np.arange(dv)).ravel()
    return LiveHeads(heads, key_slot.reshape(-1), key_heads, channels, len(q_ch), z_rows)


def live_mlp_units(weights: QwenWeights, i: int):
    """(units whose gate row, up row and down column are all nonzero; gate, up, down as
    `Csr`)."""
    gate = weights.layer_csr(i, "mlp.gate_proj.weight")
    up = weights.layer_csr(i, "mlp.up_proj.weight")
    down = weights.layer_csr(i, "mlp.down_proj.weight")
    live = np.flatnonzero((gate.counts > 0) & (up.counts > 0) & (down.col_counts() > 0))
    return live, gate, up, down


@dataclass
class _Gdn:
    heads: np.ndarray  # live value heads
    key_slot: np.ndarray  # for each live value head, its row in the live key heads
    channels: np.ndarray  # live conv channels (q of live key heads, k, v of live heads)
    n_qk: int  # live key heads * dk
    proj: SparseRows  # rows: channels, then z, b, a of live heads
    n_rows: int
    conv_w: np.ndarray  # [channels, K]
    a_log: np.ndarray
    dt_bias: np.ndarray
    norm_w: np.ndarray
    out: SparseRows  # out_proj on live heads' columns


@dataclass
class _Mlp:
    gate_up: SparseRows  # rows: gate of live units, then up of live units
    n_units: int
    down: SparseRows
    units: np.ndarray  # the live units' indices in the layer's MLP


class NumpyFastEngine(Engine):
    def __init__(self, weights: QwenWeights, observer: Observer | None = None):
        super().__init__(weights)
        self.observer = observer
        c = self.config
        self._dense_attention = ReferenceEngine(weights)
        self.gdn: dict[int, _Gdn] = {}
        self.attention_layers: list[int] = []  # full-attention layers that are not zero
        self.mlp: list[_Mlp] = []
        for i in range(c.num_hidden_layers):
            if c.layer_types[i] == LINEAR:
                self.gdn[i] = self._compile_gdn(i)
            elif not weights.layer_is_zero_attention(i):
                self.attention_layers.append(i)
            self.mlp.append(self._compile_mlp(i))
        self.in_norm = [F32(1) + weights.layer_dense(i, "input_layernorm.weight")
                        for i in range(c.num_hidden_layers)]
        self.post_norm = [F32(1) + weights.layer_dense(i, "post_attention_layernorm.weight")
                          for i in range(c.num_hidden_layers)]
        self.final_norm = F32(1) + weights.dense(FINAL_NORM)
        self.embed = weights[EMBED]  # rows are read by token ids: never densified whole
        self.head = SparseRows(weights.csr(weights.head_name))

    # -- compilation of the sparse structure --
    def _compile_gdn(self, i: int) -> _Gdn:
        w = self.weights
        live = live_gdn_heads(w, i)
        heads, key_slot, channels, z_rows = live.heads, live.key_slot, live.channels, live.z_rows
        stacked = Csr.vstack([
            w.layer_csr(i, "linear_attn.in_proj_qkv.weight").take_rows(channels),
            w.layer_csr(i, "linear_attn.in_proj_z.weight").take_rows(z_rows),
            w.layer_csr(i, "linear_attn.in_proj_b.weight").take_rows(heads),
            w.layer_csr(i, "linear_attn.in_proj_a.weight").take_rows(heads)])
        out_w = w.layer_csr(i, "linear_attn.out_proj.weight").take_cols(z_rows)
        return _Gdn(heads, key_slot, channels, live.n_qk, SparseRows(stacked),
                    stacked.shape[0],
                    w.layer_dense(i, "linear_attn.conv1d.weight")[channels, 0, :],
                    w.layer_dense(i, "linear_attn.A_log")[heads],
                    w.layer_dense(i, "linear_attn.dt_bias")[heads],
                    w.layer_dense(i, "linear_attn.norm.weight"), SparseRows(out_w))

    def _compile_mlp(self, i: int) -> _Mlp:
        live, gate, up, down = live_mlp_units(self.weights, i)
        return _Mlp(SparseRows(Csr.vstack([gate.take_rows(live), up.take_rows(live)])),
                    len(live), SparseRows(down.take_cols(live)), live)

    def conv_channels(self, layer: int) -> np.ndarray:
        """Which conv channels (rows of the reference's conv state) this engine keeps."""
        return self.gdn[layer].channels

    def mlp_units(self, layer: int) -> np.ndarray:
        """The MLP units this engine computes (the columns of "mlp_gate_live")."""
        return self.mlp[layer].units

    def new_state(self) -> ModelState:
        state = ModelState.empty(self.config)
        for i, g in self.gdn.items():
            state.conv[i] = np.zeros((len(g.channels), self.config.linear_conv_kernel_dim), F32)
        for i in range(self.config.num_hidden_layers):
            if self.config.layer_types[i] != LINEAR and i not in self.attention_layers:
                del state.keys[i], state.values[i]
        return state

    # -- execution --
    def _forward(self, state: ModelState, ids: np.ndarray, mode: str) -> np.ndarray:
        c = self.config
        eps = F32(c.rms_norm_eps)
        h = self.embed[ids]
        positions = np.arange(state.position, state.position + ids.size)
        see = self.observer
        for i in range(c.num_hidden_layers):
            if see is not None:
                see(i, "residual_in", h)
            if i in self.gdn:
                g = self.gdn[i]
                if g.heads.size:
                    x = (h * layers.rsqrt(layers.mean_square(h) + eps)) * self.in_norm[i]
                    y = self._gdn(g, x, state.conv, state.recurrent[i], i)
                    h[:, g.out.rows] += g.out.matmat(y)
            elif i in self.attention_layers:
                x = (h * layers.rsqrt(layers.mean_square(h) + eps)) * self.in_norm[i]
                h = h + self._dense_attention.attention_mixer(i, x, state, positions)
            m = self.mlp[i]
            if see is not None:
                see(i, "residual_mid", h)
            if m.n_units:
                u = (h * layers.rsqrt(layers.mean_square(h) + eps)) * self.post_norm[i]
                pre = np.zeros((h.shape[0], 2 * m.n_units), F32)
                pre[:, m.gate_up.rows] = m.gate_up.matmat(u)
                if see is not None:
                    see(i, "mlp_in", u)
                    see(i, "mlp_gate_live", pre[:, :m.n_units])
                act = layers.silu(pre[:, :m.n_units]) * pre[:, m.n_units:]
                h[:, m.down.rows] += m.down.matmat(act)
        state.position += ids.size
        if see is not None:
            see(c.num_hidden_layers, "residual_in", h)
        final = (h * layers.rsqrt(layers.mean_square(h) + eps)) * self.final_norm
        logits = np.zeros((h.shape[0], c.vocab_size), F32)
        logits[:, self.head.rows] = self.head.matmat(final)
        return logits

    def _gdn(self, g: _Gdn, x: np.ndarray, conv_states: dict, S: np.ndarray, i: int):
        c = self.config
        t_len, n_heads = x.shape[0], len(g.heads)
        dk, dv, n_ch = c.linear_key_head_dim, c.linear_value_head_dim, len(g.channels)
        proj = np.zeros((t_len, g.n_rows), F32)
        proj[:, g.proj.rows] = g.proj.matmat(x)
        qkv, conv_states[i] = layers.causal_conv(conv_states[i], proj[:, :n_ch],
                                                 g.conv_w[:, None, :])
        z = proj[:, n_ch:n_ch + n_heads * dv].reshape(t_len, n_heads, dv)
        beta = layers.sigmoid(proj[:, n_ch + n_heads * dv:n_ch + n_heads * (dv + 1)])
        decay = np.exp(layers.decay_log(proj[:, n_ch + n_heads * (dv + 1):], g.a_log, g.dt_bias))
        q = layers.l2norm(qkv[:, :g.n_qk].reshape(t_len, -1, dk))[:, g.key_slot] / F32(dk ** 0.5)
        k = layers.l2norm(qkv[:, g.n_qk:2 * g.n_qk].reshape(t_len, -1, dk))[:, g.key_slot]
        v = qkv[:, 2 * g.n_qk:].reshape(t_len, n_heads, dv)
        rows2d = S.reshape(-1, dv)  # row (head h, key j) is h * dk + j
        out = np.zeros((t_len, n_heads, dv), F32)
        for t in range(t_len):
            fading = np.flatnonzero(decay[t] != 1)
            if fading.size:
                S[g.heads[fading]] *= decay[t, fading][:, None, None]
            slot, j = np.nonzero(k[t])
            if slot.size:  # delta-rule write on the rows the keys touch
                rows, kval = g.heads[slot] * dk + j, k[t, slot, j][:, None]
                first = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1]])
                kv_mem = np.add.reduceat(rows2d[rows] * kval, first, axis=0)
                written = slot[first]
                delta = (v[t, written] - kv_mem) * beta[t, written][:, None]
                group = np.cumsum(np.r_[True, slot[1:] != slot[:-1]]) - 1
                rows2d[rows] += kval * delta[group]
            slot, j = np.nonzero(q[t])
            if slot.size:  # read: o = S^T q on the rows the queries touch
                rows = g.heads[slot] * dk + j
                first = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1]])
                out[t, slot[first]] = np.add.reduceat(rows2d[rows] * q[t, slot, j][:, None],
                                                      first, axis=0)
        y = layers.rms_norm_gated(out, z, g.norm_w, c.rms_norm_eps)
        return y.reshape(t_len, n_heads * dv)
