"""merge.tensors: every tensor of the merged model, computed in row blocks (or, for the
circuit's mostly-zero matrices, straight from its stored entries) from the base's and the
circuit's (layout and reasons: merge.layout, docs/merge.md).

A merged matrix is the base's or the circuit's matrix placed in the shared dims, plus a
few *extra* entries on the flag dims:
- circuit layers: the circuit's weights in dims [0, Hc); its gates (GDN z, b, a, MLP gate,
  attention output gate) read the text flag T with -FLAG_GAIN; the last circuit layer's
  free MLP unit (the kill) reads K and writes KILL into K;
- base layers: the base's weights in dims [0, Hb), writes scaled by the text scale, norm
  weights compensated for the wider stream; with `neutralise` its gates read the GPU
  flag K with -NEUTRAL_GAIN;
- embedding: text rows s * base row and T = c; GPU rows the circuit's plus the ballast
  (K = b0, ...); the pad row T = c, K = PAD_GPU_FLAG;
- head (untied): text rows the base's head and -NEUTRAL_GAIN on K; GPU rows the circuit's
  head scaled column by column (its own final norm, the merged final norm's weights and
  the kill's scale undone, x GPU_LOGIT_GAIN) and -HEAD_FLAG_GAIN on T; the pad row both
  flags negative;
- final norm: compensated base dims, 1 (weight 0) elsewhere.
"""

from __future__ import annotations

import numpy as np

from qgpu.merge.layout import (
    FLAG_GAIN,
    GPU_LOGIT_GAIN,
    HEAD_FLAG_GAIN,
    KILL_GATE,
    NEUTRAL_GAIN,
    PAD_GPU_FLAG,
    MergeError,
    MergeLayout,
    free_unit,
)
from qgpu.merge.writer import is_bf16
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import EMBED, FINAL_NORM, LM_HEAD, QwenWeights, expected_shapes

NORMS = ("input_layernorm.weight", "post_attention_layernorm.weight")
READS_RESIDUAL = (
    "linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight",
    "linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight",
)
WRITES_RESIDUAL = ("linear_attn.out_proj.weight", "self_attn.o_proj.weight",
                   "mlp.down_proj.weight")
GATES = ("linear_attn.in_proj_z.weight", "linear_attn.in_proj_b.weight",
         "linear_attn.in_proj_a.weight", "mlp.gate_proj.weight")
GATE_ROWS_OF_Q = "self_attn.q_proj.weight"  # per head: hd query rows, then hd gate rows
F32 = np.float32
I64 = np.int64


def split_layer_name(name: str) -> tuple[int, str] | None:
    """"model.layers.7.mlp.up_proj.weight" -> (7, "mlp.up_proj.weight")."""
    if not name.startswith("model.layers."):
        return None
    index, short = name[len("model.layers."):].split(".", 1)
    return int(index), short


class MergedTensors:
    """rows(name, start, stop) of any merged tensor; `base` is a merge.source source,
    `circuit` the compiled `QwenWeights`."""

    def __init__(self, layout: MergeLayout, base, circuit: QwenWeights, circuit_norm: float):
        self.layout = layout
        self.base = base
        self.circuit = circuit
        self.circuit_norm = circuit_norm  # the circuit's norm weight, sqrt(mean) - 1
        last = circuit.config.num_hidden_layers - 1
        self.kill_unit = 0 if layout.kill_layer else free_unit(circuit, last)
        if self.kill_unit is None:
            raise MergeError(f"the circuit's last layer ({last}) has no free MLP unit for "
                             f"the GPU flag's kill: merge with a kill layer")
        self.final = self._norm_vector(self.base.rows(FINAL_NORM, 0, layout.base_hidden), None)
        self.head_scale = self._head_scale()

    # -- helpers --
    def _compensated(self, weight: np.ndarray) -> np.ndarray:
        """A base norm weight for the wider stream: 1 + w' = (1 + w) * norm_factor."""
        lay = self.layout
        return ((1.0 + weight.astype(np.float64)) * lay.norm_factor - 1.0).astype(F32)

    def _norm_vector(self, base_w: np.ndarray | None, circuit_w: np.ndarray | None
                     ) -> np.ndarray:
        """A merged norm weight: base layers (circuit_w None) the compensated base weight
        on base dims, 0 elsewhere; circuit layers the circuit's weight on its dims and on
        the flag and ballast dims (their mean-square bookkeeping is the circuit's)."""
        lay = self.layout
        out = np.zeros(lay.hidden, F32)
        if base_w is not None:
            out[:lay.base_hidden] = self._compensated(base_w)
        if circuit_w is not None:
            out[:lay.circuit_hidden] = circuit_w
            out[lay.shared:] = self.circuit_norm
        return out

    def _head_scale(self) -> np.ndarray:
        """Per circuit dim, the factor on the circuit's head: its own final norm (1 + w) /
        sqrt(mean) (what the circuit's logits were computed with), divided by the merged
        final norm's (1 + w) and by the GPU token's final rsqrt (the kill's scale), x the
        logit gain."""
        lay = self.layout
        hc = lay.circuit_hidden
        own = (1.0 + np.asarray(self.circuit[FINAL_NORM], np.float64)) / np.sqrt(lay.mean)
        merged = 1.0 + self.final[:hc].astype(np.float64)
        used = self.circuit.csr(LM_HEAD).col_counts() > 0
        tiny = used & (np.abs(merged) < 1e-3)
        if tiny.any():
            raise MergeError(f"the base's final norm scales shared dim {int(np.argmax(tiny))} "
                             f"by {merged[np.argmax(tiny)]:.2e}: the circuit's head cannot "
                             f"read it there")
        return own / merged * (GPU_LOGIT_GAIN / lay.gpu_final_scale())

    def extras(self, name: str) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """The entries a merged matrix has on top of its placed base/circuit matrix, as
        (rows, cols, values)."""
        lay = self.layout
        if name == EMBED:
            return []  # written by _embedding (dense rows per token kind)
        if name == LM_HEAD:
            text = np.arange(lay.gpu_token_offset, dtype=I64)
            gpu = np.arange(lay.gpu_token_offset, lay.pad_token + 1, dtype=I64)
            pad = np.array([lay.pad_token], I64)
            return [_column(text, lay.gpu_flag_dim, -NEUTRAL_GAIN),
                    _column(gpu, lay.flag_dim, -HEAD_FLAG_GAIN),
                    _column(pad, lay.gpu_flag_dim, -NEUTRAL_GAIN)]
        split = split_layer_name(name)
        if split is None:
            return []
        index, short = split
        shape = self.shape(name)
        circuit = index < lay.circuit_layers
        flag = lay.flag_dim if circuit else lay.gpu_flag_dim
        gain = -FLAG_GAIN if circuit else -NEUTRAL_GAIN
        out = []
        if short in GATES and (circuit or lay.neutralise):
            out.append(_column(np.arange(shape[0], dtype=I64), flag, gain))
        if short == GATE_ROWS_OF_Q and (circuit or lay.neutralise):
            hd = lay.base.head_dim
            rows = np.flatnonzero((np.arange(shape[0]) // hd) % 2 == 1).astype(I64)
            out.append(_column(rows, flag, gain))
        if index == lay.circuit_layers - 1:  # the kill unit
            u, k = self.kill_unit, lay.gpu_flag_dim
            if short == "mlp.gate_proj.weight":
                out.append(_column(np.array([u], I64), k, KILL_GATE))
            elif short == "mlp.up_proj.weight":
                out.append(_column(np.array([u], I64), k, 1.0))
            elif short == "mlp.down_proj.weight":
                out.append((np.array([k], I64), np.array([u], I64),
                            np.array([lay.kill_down], F32)))
        return out

    def shape(self, name: str) -> tuple[int, ...]:
        if not hasattr(self, "_shapes"):
            self._shapes = expected_shapes(self.layout.merged_config())
        return self._shapes[name]

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        if name == FINAL_NORM:
            return self.final[start:stop].copy()
        if name == EMBED:
            out = self._embedding(start, stop)
        elif name == LM_HEAD:
            out = self._head(start, stop)
        else:
            index, short = split_layer_name(name)
            if index < self.layout.circuit_layers:
                out = self._circuit_layer(index, short, start, stop)
            else:
                out = self._base_layer(index - self.layout.circuit_layers, short, start, stop)
        for r, c, v in self.extras(name):
            keep = (r >= start) & (r < stop)
            out[r[keep] - start, c[keep]] += np.broadcast_to(v, r.shape)[keep]
        return out

    # -- storage dtypes (merge_checkpoint) --
    def dtype(self, name: str) -> str:
        """"BF16" where every value of the merged tensor is a bfloat16 number and its
        source is stored so (a release's base weights; the circuit's where its values
        are), else "F32". Base weights keep BF16 through the merge: the text scale and
        the flag gains are powers of two. Norm weights (compensated), the embedding (the
        text flag c) and the head (rescaled GPU rows) stay F32."""
        split = split_layer_name(name)
        if split is None:
            return "F32"
        index, short = split
        if short in NORMS:
            return "F32"
        if index >= self.layout.circuit_layers:
            base_name = f"model.layers.{index - self.layout.circuit_layers}.{short}"
            return "BF16" if self.base.dtype(base_name) == "BF16" else "F32"
        if index >= self.circuit.config.num_hidden_layers:
            return "F32"  # the kill layer (small: zeros and a few entries)
        tensor = self.circuit.layer(index, short)
        values = tensor.csr().vals if isinstance(tensor, SparseTensor) else np.asarray(tensor)
        extra = [np.asarray(v, F32) for _, _, v in self.extras(name)]
        return "BF16" if all(is_bf16(v) for v in [values, *extra]) else "F32"

    # -- sparse fast path (merge_weights in memory) --
    def sparse(self, name: str, shape: tuple[int, int]) -> SparseTensor | None:
        """The merged tensor straight from the circuit's stored entries, without a dense
        pass, where it is a circuit layer's matrix, the embedding or the head and the
        circuit holds it sparse; None elsewhere (the caller builds it in row blocks)."""
        lay = self.layout
        if name in (EMBED, LM_HEAD):
            if not self.circuit.is_sparse(name):
                return None
            text = self.rows(name, 0, lay.gpu_token_offset)
            r, c = np.nonzero(text.view(np.uint32))
            parts = [(r.astype(I64), c.astype(I64), text[r, c])]
            gpu = self.rows(name, lay.gpu_token_offset, shape[0])
            r, c = np.nonzero(gpu.view(np.uint32))
            parts.append((r.astype(I64) + lay.gpu_token_offset, c.astype(I64), gpu[r, c]))
            return _from_parts(shape, parts)
        split = split_layer_name(name)
        if split is None or split[0] >= lay.circuit_layers:
            return None
        index, short = split
        layer_name = f"model.layers.{index}.{short}"
        if index >= self.circuit.config.num_hidden_layers:  # the kill layer: extras only
            if short not in READS_RESIDUAL + WRITES_RESIDUAL:
                return None
            empty = (np.zeros(0, I64), np.zeros(0, I64), np.zeros(0, F32))
            return _from_parts(shape, _merge_duplicates(shape, [empty, *self.extras(name)]))
        if short not in READS_RESIDUAL + WRITES_RESIDUAL or not self.circuit.is_sparse(
                layer_name):
            return None
        csr = self.circuit.csr(layer_name)
        parts = [(csr.row_ids(), csr.cols.astype(I64), csr.vals)]
        return _from_parts(shape, _merge_duplicates(shape, parts + self.extras(name)))

    # -- embedding and head --
    def _token_rows(self, start, stop, text_rows, gpu_rows, pad_row) -> np.ndarray:
        lay = self.layout
        out = np.zeros((stop - start, lay.hidden), F32)
        vb, pad = lay.gpu_token_offset, lay.pad_token
        if start < vb:
            text_rows(out[:min(stop, vb) - start], start, min(stop, vb))
        if stop > vb and start < pad:
            first, last = max(start, vb), min(stop, pad)
            gpu_rows(out[first - start:last - start], first - vb, last - vb)
        if start <= pad < stop:
            pad_row(out[pad - start])
        return out

    def _embedding(self, start: int, stop: int) -> np.ndarray:
        lay = self.layout

        def text(out, a, b):
            out[:, :lay.base_hidden] = self.base.rows(EMBED, a, b) * F32(lay.text_scale)
            out[:, lay.flag_dim] = lay.flag_value

        def gpu(out, a, b):
            out[:, :lay.circuit_hidden] = self.circuit[EMBED][a:b]
            out[:, lay.ballast_dims] = np.asarray(lay.ballast, F32)

        def pad(row):
            row[lay.flag_dim] = lay.flag_value
            row[lay.gpu_flag_dim] = PAD_GPU_FLAG

        return self._token_rows(start, stop, text, gpu, pad)

    def _head(self, start: int, stop: int) -> np.ndarray:
        lay = self.layout

        def text(out, a, b):
            out[:, :lay.base_hidden] = self.base.rows(LM_HEAD, a, b)

        def gpu(out, a, b):
            head = np.asarray(self.circuit[LM_HEAD][a:b], np.float64)
            out[:, :lay.circuit_hidden] = (head * self.head_scale).astype(F32)

        return self._token_rows(start, stop, text, gpu, lambda row: None)

    # -- layers --
    def _circuit_layer(self, index: int, short: str, start: int, stop: int) -> np.ndarray:
        lay = self.layout
        if index >= self.circuit.config.num_hidden_layers:  # the kill layer: zeros + extras
            if short in NORMS:
                return self._norm_vector(None, np.full(lay.circuit_hidden, self.circuit_norm,
                                                       F32))[start:stop]
            shape = self.shape(f"model.layers.{index}.{short}")
            return np.zeros((stop - start, *shape[1:]), F32)
        src = self.circuit.layer(index, short)
        if short in NORMS:
            return self._norm_vector(None, src)[start:stop]
        if short in READS_RESIDUAL:
            out = np.zeros((stop - start, lay.hidden), F32)
            out[:, :lay.circuit_hidden] = src[start:stop]
            return out
        if short in WRITES_RESIDUAL:
            return self._place_rows(src, start, stop, 1.0)
        return np.array(src[start:stop], F32)

    def _base_layer(self, index: int, short: str, start: int, stop: int) -> np.ndarray:
        lay = self.layout
        name = f"model.layers.{index}.{short}"
        if short in NORMS:
            return self._norm_vector(self.base.rows(name, 0, lay.base_hidden), None)[start:stop]
        if short in READS_RESIDUAL:
            out = np.zeros((stop - start, lay.hidden), F32)
            out[:, :lay.base_hidden] = self.base.rows(name, start, stop)
            return out
        if short in WRITES_RESIDUAL:
            return self._place_rows(_RowsOf(self.base, name), start, stop, lay.text_scale)
        return self.base.rows(name, start, stop).copy()

    def _place_rows(self, src, start: int, stop: int, scale: float) -> np.ndarray:
        """Merged rows [start, stop) of a matrix whose rows are residual dims, the source's
        rows sitting at [0, len(src))."""
        count = src.shape[0]
        out = np.zeros((stop - start, src.shape[1]), F32)
        b = min(stop, count)
        if start < b:
            block = np.asarray(src[start:b], F32)
            out[:b - start] = block * F32(scale) if scale != 1.0 else block
        return out


def _column(rows: np.ndarray, col: int, value: float):
    return rows, np.full(rows.size, col, I64), np.full(rows.size, value, F32)


def _merge_duplicates(shape, parts):
    """Parts whose positions may repeat, summed per position in float32 (as the dense
    path adds an extra entry onto the placed value)."""
    flat = np.concatenate([r * shape[1] + c for r, c, _ in parts])
    vals = np.concatenate([np.broadcast_to(np.asarray(v, F32), r.shape) for r, _, v in parts])
    keys, inverse = np.unique(flat, return_inverse=True)
    if keys.size == flat.size:
        return [(flat // shape[1], flat % shape[1], vals)]
    total = np.zeros(keys.size, F32)
    np.add.at(total, inverse.reshape(-1), vals)
    return [(keys // shape[1], keys % shape[1], total)]


def _from_parts(shape, parts) -> SparseTensor:
    """A SparseTensor from (rows, cols, values) parts at distinct positions."""
    flat = np.concatenate([r * shape[1] + c for r, c, _ in parts])
    vals = np.concatenate([np.asarray(v, F32) for _, _, v in parts])
    order = np.argsort(flat, kind="stable")
    keep = vals[order].view(np.uint32) != 0
    return SparseTensor.from_flat(shape, flat[order][keep], vals[order][keep])


class _RowsOf:
    """Slicing view of one base tensor (rows fetched on demand)."""

    def __init__(self, source, name: str):
        self.source, self.name = source, name
        self.shape = source.shape(name)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.source.rows(self.name, rows.start, rows.stop)
