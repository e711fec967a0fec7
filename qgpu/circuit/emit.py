"""circuit.emit: a `Plan` -> `QwenWeights` (a stack of Qwen3.5 layers, the embedding and
an untied output head), through the primitives.

The weights are written sparse: `QwenWeights.zeros` holds every large matrix as a
`SparseTensor` (model.sparse_tensor), which the primitives index-assign into as they would
into a numpy array; the embedding and the output head are built sparse too.

Order per layer: the mixer's tables and counters (emit_tables), then the MLP: the units
placed there (in topological order), the cancellations of dead pieces, and the norm
ledger's rebalancing unit, so that after every MLP the residual's mean square is again
exactly the ledger's power of 4 and every RMSNorm stays the identity. Every step a unit
places is recorded as a `Threshold` (named "<node>: <step>") for the margin report.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.circuit.emit_tables import emit_counter, emit_table
from qgpu.circuit.ir import MIXER, MLP, Counter, Ref, Table, TokenInput, Unit
from qgpu.circuit.outputs import output_head
from qgpu.circuit.schedule import Plan
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.sparse_tensor import SparseTensor
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights
from qgpu.primitives import CircuitError, MlpWriter, Threshold
from qgpu.primitives.norm import NormLedger
from qgpu.progress import progress as progress_bar


@dataclass
class Emitted:
    weights: QwenWeights
    thresholds: list[Threshold]


def model_config(plan: Plan) -> QwenConfig:
    s = plan.shape
    types = [LINEAR] * plan.n_layers
    types[plan.attention_layer] = FULL
    return QwenConfig(
        hidden_size=plan.hidden, num_hidden_layers=plan.n_layers, layer_types=types,
        vocab_size=plan.circuit.vocab_size, intermediate_size=s.mlp,
        linear_num_key_heads=s.key_heads, linear_num_value_heads=s.value_heads,
        linear_key_head_dim=s.key_dim, linear_value_head_dim=s.value_dim,
        linear_conv_kernel_dim=s.conv, num_attention_heads=s.attention_heads,
        num_key_value_heads=s.attention_kv_heads, head_dim=s.attention_head_dim,
        tie_word_embeddings=False)


def dims_of(plan: Plan):
    def dims(ref: Ref) -> list[int]:
        base = plan.dims[ref.signal]
        return [base[o] for o in ref.offsets]
    return dims


def embedding(plan: Plan, ledger: NormLedger) -> SparseTensor:
    """The token embeddings [vocab, hidden], built sparse (token inputs, `one`, ballast)."""
    c = plan.circuit
    emb = SparseTensor.zeros((c.vocab_size, plan.hidden))
    emb[:, plan.one] = 1.0
    for node in plan.order:
        if isinstance(node, TokenInput):
            emb[:, plan.dims[node.outputs[0]]] = node.values
    entries = emb.csr()
    sumsq = np.bincount(entries.row_ids(), weights=entries.vals.astype(np.float64) ** 2,
                        minlength=c.vocab_size)
    if not np.all(sumsq == plan.embed_sumsq):
        raise CircuitError("token embeddings do not all have the same sum of squares")
    first = ledger.embedding_row({d: float(v) for d, v in enumerate(emb[0]) if v and
                                  d != plan.one})
    emb[:, plan.ballast] = first[plan.ballast]
    return emb


def emit(plan: Plan, progress: bool = False) -> Emitted:
    config = model_config(plan)
    w = QwenWeights.zeros(config)
    ledger = NormLedger(plan.hidden, plan.one, plan.ballast, plan.mean)
    w[EMBED] = embedding(plan, ledger)
    ledger.set_norm_weights(w)
    dims, one = dims_of(plan), plan.one
    thresholds: list[Threshold] = []
    bar = progress_bar(total=plan.n_layers, desc=f"qgpu compile {plan.circuit.name}",
                       unit="layer", enabled=progress, leave=True)
    for layer in range(plan.n_layers):
        for node in plan.nodes_at(layer, MIXER):
            if isinstance(node, Table):
                emit_table(w, layer, node, plan.heads[node], dims, one)
            elif isinstance(node, Counter):
                emit_counter(w, layer, node, plan.heads[node][0], dims, one)
        mlp = MlpWriter(w, layer)
        for node in plan.nodes_at(layer, MLP):
            assert isinstance(node, Unit)
            start, first = mlp.next_unit, len(mlp.thresholds)
            node.emit(mlp, dims, one, node.outputs)
            if mlp.next_unit - start != node.units:
                raise CircuitError(f"{node.name} placed {mlp.next_unit - start} units, "
                                   f"counted {node.units}")
            for th in mlp.thresholds[first:]:
                th.name = f"{node.name}: {th.name}"
        for piece in plan.cancels.get(layer, []):  # adds -x: 32 x * (-1/32), exact
            for d in plan.ref_dims(piece):
                mlp.unit({one: 32.0}, {d: 1.0}, {d: -1.0 / 32})
        if mlp.next_unit != plan.units[layer]:
            raise CircuitError(f"layer {layer}: {mlp.next_unit} units, planned "
                               f"{plan.units[layer]}")
        ledger.rebalance(mlp, plan.sumsq_after[layer])
        thresholds += mlp.thresholds
        bar.set_postfix_str(f"{config.layer_types[layer]}: {plan.heads_used[layer]} heads, "
                            f"{mlp.next_unit} MLP units", refresh=False)
        bar.update()
    bar.close()
    w[LM_HEAD] = output_head(plan.circuit, plan.hidden, dims, one)
    return Emitted(w, thresholds)
