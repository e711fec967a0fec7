"""merge.tensors: every tensor of the merged model, computed in row blocks from the base's
and the circuit's (layout: merge.layout).

Per merged layer:
- circuit layers (the first Lc): the circuit's weights in the circuit's dims (columns of
  the projections that read the residual, rows of those that write it); their norm weights
  the circuit's own in its dims; the GDN `b` and `a` projections also read the text flag
  with -FLAG_GAIN, so a text token has beta = 0 (no write, even when the conv window holds
  GPU tokens' projections) and a decay of exactly 1;
- base layers: the base's weights in the base's dims, writes scaled by the text scale, norm
  weights compensated for the wider stream; in the circuit's dims the norm weight is the
  circuit's (the constant dim reaches the projections as exactly 1), and with
  `neutralise` the constant dim switches the base off for GPU tokens: beta = 0 and decay
  exactly 1 in every GDN layer, the output gate 0 in every attention layer.
Embedding: text rows s * base row plus the flag, GPU rows the circuit's plus the merge
ballast. Head (untied): text rows the base's head, GPU rows the circuit's x GPU_LOGIT_GAIN
plus -FLAG_GAIN on the flag. Final norm: compensated base dims, the circuit's dims as is.
"""

from __future__ import annotations

import numpy as np

from qgpu.merge.layout import (
    FLAG_GAIN,
    GPU_LOGIT_GAIN,
    NEUTRAL_DECAY,
    NEUTRAL_GATE,
    MergeLayout,
)
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import EMBED, FINAL_NORM, LM_HEAD, QwenWeights

NORMS = ("input_layernorm.weight", "post_attention_layernorm.weight")
READS_RESIDUAL = (
    "linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight",
    "linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight",
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
    "mlp.gate_proj.weight", "mlp.up_proj.weight",
)
WRITES_RESIDUAL = ("linear_attn.out_proj.weight", "self_attn.o_proj.weight",
                   "mlp.down_proj.weight")
F32 = np.float32


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

    # -- helpers --
    def _compensated(self, weight: np.ndarray) -> np.ndarray:
        """A base norm weight for the wider stream: 1 + w' = (1 + w) * norm_factor."""
        lay = self.layout
        return ((1.0 + weight.astype(np.float64)) * lay.norm_factor - 1.0).astype(F32)

    def _norm_vector(self, base_w: np.ndarray | None, circuit_w: np.ndarray) -> np.ndarray:
        lay = self.layout
        out = np.zeros(lay.hidden, F32)
        if base_w is not None:
            out[:lay.base_hidden] = self._compensated(base_w)
        out[lay.circuit_offset:lay.flag_dim] = circuit_w
        return out

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        if name == EMBED:
            return self._embedding(start, stop)
        if name == LM_HEAD:
            return self._head(start, stop)
        if name == FINAL_NORM:
            return self._norm_vector(self.base.rows(FINAL_NORM, 0, self.layout.base_hidden),
                                     self.circuit[FINAL_NORM])[start:stop]
        index, short = split_layer_name(name)
        if index < self.layout.circuit_layers:
            return self._circuit_layer(index, short, start, stop)
        return self._base_layer(index - self.layout.circuit_layers, short, start, stop)

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
            csr = self.circuit.csr(name)
            rows = csr.row_ids() + lay.gpu_token_offset
            cols = csr.cols + lay.circuit_offset
            vals = csr.vals * F32(GPU_LOGIT_GAIN) if name == LM_HEAD else csr.vals
            if name == EMBED:
                extra = [(d, v) for d, v in zip(lay.ballast_dims, lay.ballast, strict=True) if v]
            else:
                extra = [(lay.flag_dim, -FLAG_GAIN)]
            gpu = np.arange(lay.gpu_token_offset, shape[0], dtype=np.int64)
            parts = [(r.astype(np.int64), c.astype(np.int64), text[r, c]), (rows, cols, vals)]
            parts += [(gpu, np.full(gpu.size, d, np.int64), np.full(gpu.size, v, F32))
                      for d, v in extra]
            return _from_parts(shape, parts)
        split = split_layer_name(name)
        if split is None or split[0] >= lay.circuit_layers:
            return None
        index, short = split
        layer_name = f"model.layers.{index}.{short}"
        if short not in READS_RESIDUAL + WRITES_RESIDUAL or not self.circuit.is_sparse(
                layer_name):
            return None
        csr = self.circuit.csr(layer_name)
        rows, cols = csr.row_ids(), csr.cols.astype(np.int64)
        if short in WRITES_RESIDUAL:
            return _from_parts(shape, [(rows + lay.circuit_offset, cols, csr.vals)])
        parts = [(rows, cols + lay.circuit_offset, csr.vals)]
        if short in ("linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight"):
            every = np.arange(shape[0], dtype=np.int64)
            parts.append((every, np.full(every.size, lay.flag_dim, np.int64),
                          np.full(every.size, -FLAG_GAIN, F32)))
        return _from_parts(shape, parts)

    # -- embedding and head --
    def _token_rows(self, start, stop, text_rows, gpu_rows) -> np.ndarray:
        lay = self.layout
        out = np.zeros((stop - start, lay.hidden), F32)
        vb = lay.gpu_token_offset
        if start < vb:
            text_rows(out[:min(stop, vb) - start], start, min(stop, vb))
        if stop > vb:
            first = max(start, vb)
            gpu_rows(out[first - start:], first - vb, stop - vb)
        return out

    def _embedding(self, start: int, stop: int) -> np.ndarray:
        lay = self.layout

        def text(out, a, b):
            out[:, :lay.base_hidden] = self.base.rows(EMBED, a, b) * F32(lay.text_scale)
            out[:, lay.flag_dim] = lay.flag_value

        def gpu(out, a, b):
            out[:, lay.circuit_offset:lay.flag_dim] = self.circuit[EMBED][a:b]
            out[:, lay.ballast_dims] = np.asarray(lay.ballast, F32)

        return self._token_rows(start, stop, text, gpu)

    def _head(self, start: int, stop: int) -> np.ndarray:
        lay = self.layout

        def text(out, a, b):
            out[:, :lay.base_hidden] = self.base.rows(LM_HEAD, a, b)

        def gpu(out, a, b):
            out[:, lay.circuit_offset:lay.flag_dim] = self.circuit[LM_HEAD][a:b] * F32(
                GPU_LOGIT_GAIN)
            out[:, lay.flag_dim] = -FLAG_GAIN

        return self._token_rows(start, stop, text, gpu)

    # -- layers --
    def _circuit_layer(self, index: int, short: str, start: int, stop: int) -> np.ndarray:
        lay, src = self.layout, self.circuit.layer(index, short)
        if short in NORMS:
            return self._norm_vector(None, src)[start:stop]
        if short in READS_RESIDUAL:
            out = np.zeros((stop - start, lay.hidden), F32)
            out[:, lay.circuit_offset:lay.flag_dim] = src[start:stop]
            if short in ("linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight"):
                out[:, lay.flag_dim] = -FLAG_GAIN
            return out
        if short in WRITES_RESIDUAL:
            return self._place_rows(src, lay.circuit_offset, start, stop, 1.0)
        return src[start:stop].copy()

    def _base_layer(self, index: int, short: str, start: int, stop: int) -> np.ndarray:
        lay = self.layout
        name = f"model.layers.{index}.{short}"
        if short in NORMS:
            full = np.full(lay.circuit_hidden, self.circuit_norm, F32)
            return self._norm_vector(self.base.rows(name, 0, lay.base_hidden), full)[start:stop]
        if short in READS_RESIDUAL:
            out = np.zeros((stop - start, lay.hidden), F32)
            out[:, :lay.base_hidden] = self.base.rows(name, start, stop)
            if lay.neutralise:
                self._neutralise(short, out, start, stop)
            return out
        if short in WRITES_RESIDUAL:
            return self._place_rows(_RowsOf(self.base, name), 0, start, stop, lay.text_scale)
        return self.base.rows(name, start, stop).copy()

    def _neutralise(self, short: str, out: np.ndarray, start: int, stop: int) -> None:
        """Columns on the constant dim that switch a base layer off for GPU tokens."""
        one = self.layout.one_dim
        if short == "linear_attn.in_proj_b.weight":
            out[:, one] = NEUTRAL_GATE
        elif short == "linear_attn.in_proj_a.weight":
            out[:, one] = NEUTRAL_DECAY
        elif short == "self_attn.q_proj.weight":  # per head: hd query rows, then hd gate rows
            hd = self.layout.base.head_dim
            rows = np.arange(start, stop)
            out[(rows // hd) % 2 == 1, one] = NEUTRAL_GATE

    def _place_rows(self, src, offset: int, start: int, stop: int, scale: float) -> np.ndarray:
        """Merged rows [start, stop) of a matrix whose rows are residual dims, the source's
        rows sitting at [offset, offset + len(src))."""
        count = src.shape[0]
        out = np.zeros((stop - start, src.shape[1]), F32)
        a, b = max(start, offset), min(stop, offset + count)
        if a < b:
            block = src[a - offset:b - offset]
            out[a - start:b - start] = block * F32(scale) if scale != 1.0 else block
        return out


def _from_parts(shape, parts) -> SparseTensor:
    """A SparseTensor from (rows, cols, values) parts at distinct positions."""
    flat = np.concatenate([r * shape[1] + c for r, c, _ in parts])
    vals = np.concatenate([np.asarray(v, F32) for _, _, v in parts])
    order = np.argsort(flat, kind="stable")
    return SparseTensor.from_flat(shape, flat[order], vals[order])


class _RowsOf:
    """Slicing view of one base tensor (rows fetched on demand)."""

    def __init__(self, source, name: str):
        self.source, self.name = source, name
        self.shape = source.shape(name)

    def __getitem__(self, rows: slice) -> np.ndarray:
        return self.source.rows(self.name, rows.start, rows.stop)
