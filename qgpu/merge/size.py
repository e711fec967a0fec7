"""merge.size: what a merge costs, computed from shapes (no weights needed) and, for the
machine, from figures of the compiled machine (kept equal to it by a test).

`merge_size(base_config, circuit_hidden, circuit_layers, circuit_vocab, ...)` builds the
merged layout (shared dims: hidden = max(base, circuit) + flags) for a circuit of that
size and counts parameters and bytes:
- on disk: each tensor in the dtype `qgpu merge` stores it in (merge.tensors.dtype): a
  bf16 base's layer weights in bf16, the circuit layers' tensors in bf16 where all their
  values are bfloat16 numbers (`circuit_bf16_params` of them), norms, embedding and head
  in float32;
- resident in transformers (float32): every weight dense, the recurrent and conv states, a
  KV cache per 1,000 tokens of context, one row of logits;
- resident in qgpu's loader: the circuit layers' matrices sparse (~8 bytes an entry:
  column index and value, `circuit_nonzeros`), everything else dense float32;
- the peak of `merge_checkpoint`: the compiled circuit held sparse plus the blocks in
  flight.
`machine_size()`: the machine circuit merged into Qwen3.5-2B (`python -m qgpu.merge.size
[--compile]`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.merge.layout import MergeLayout
from qgpu.merge.writer import BLOCK_BYTES
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import EMBED, LM_HEAD, expected_shapes
from qgpu.protocol.vocab import VOCAB_SIZE

F32 = 4
GIB = 2 ** 30
SPARSE_ENTRY = 8  # int32 column + float32 value (CSR; the row pointers are small)


def parameters(config: QwenConfig) -> int:
    return int(sum(np.prod(s, dtype=np.int64) for s in expected_shapes(config).values()))


def state_bytes(config: QwenConfig, context: int) -> int:
    """Recurrent + conv state of every GDN layer, KV cache of every attention layer."""
    c, total = config, 0
    for kind in c.layer_types:
        if kind == LINEAR:
            total += c.linear_num_value_heads * c.linear_key_head_dim * c.linear_value_head_dim
            total += c.conv_dim * c.linear_conv_kernel_dim
        else:
            total += 2 * context * c.num_key_value_heads * c.head_dim
    return F32 * total


def _is_norm(name: str) -> bool:
    return name.endswith("layernorm.weight") or name == "model.norm.weight"


@dataclass
class SizeReport:
    base: QwenConfig
    merged: QwenConfig
    layout: MergeLayout
    base_parameters: int
    circuit_parameters: int  # the compiled circuit on its own (dense)
    merged_parameters: int
    disk_bytes: dict  # part -> bytes on disk: circuit layers, base layers, embedding + head
    transformers_bytes: int  # resident in transformers float32 (+ state at 1k, logits)
    loader_bytes: int  # resident in qgpu's loader (circuit layers sparse)
    merge_peak_bytes: int

    @property
    def disk_total(self) -> int:
        return sum(self.disk_bytes.values())

    def rows(self) -> list[tuple[str, str]]:
        lay, d = self.layout, self.disk_bytes
        return [
            ("hidden (shared dims + text flag + GPU flag and ballast)",
             f"{lay.hidden:,} = max({lay.base_hidden:,} base, {lay.circuit_hidden:,} "
             f"circuit) + 1 + {len(lay.ballast)}"),
            ("layers (circuit + base)", f"{self.merged.num_hidden_layers} = "
             f"{lay.circuit_layers} + {self.base.num_hidden_layers}"),
            ("vocabulary (text + GPU + pad)", f"{self.merged.vocab_size:,} = "
             f"{self.base.vocab_size:,} + {lay.circuit.vocab_size:,} + 1"),
            ("parameters: base, circuit alone (dense), merged",
             f"{self.base_parameters / 1e9:.3f} B, {self.circuit_parameters / 1e9:.3f} B, "
             f"{self.merged_parameters / 1e9:.3f} B"),
            ("merged checkpoint on disk (bf16 base weights, circuit float32 where not "
             "bf16-exact)", f"{self.disk_total / GIB:.1f} GiB"),
            ("of which circuit layers, base layers, embedding + head",
             f"{d['circuit'] / GIB:.1f}, {d['base'] / GIB:.1f}, {d['embedding'] / GIB:.1f} GiB"),
            ("resident in transformers, float32 (weights, state at 1k tokens, logits)",
             f"{self.transformers_bytes / GIB:.1f} GiB"),
            ("resident in qgpu's loader (circuit layers sparse)",
             f"{self.loader_bytes / GIB:.1f} GiB"),
            ("RAM of the merge (circuit held sparse + blocks; compiling adds its own peak)",
             f"{self.merge_peak_bytes / GIB:.2f} GiB"),
        ]

    def markdown(self) -> str:
        lines = ["| item | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in self.rows()]
        return "\n".join(lines)


def circuit_config(base: QwenConfig, hidden: int, layers: int, vocab: int) -> QwenConfig:
    """A circuit's config at the base's layer shapes (last layer the zero attention)."""
    return QwenConfig(
        hidden_size=hidden, num_hidden_layers=layers,
        layer_types=[LINEAR] * (layers - 1) + [FULL], vocab_size=vocab,
        intermediate_size=base.intermediate_size,
        linear_num_key_heads=base.linear_num_key_heads,
        linear_num_value_heads=base.linear_num_value_heads,
        linear_key_head_dim=base.linear_key_head_dim,
        linear_value_head_dim=base.linear_value_head_dim,
        linear_conv_kernel_dim=base.linear_conv_kernel_dim,
        num_attention_heads=base.num_attention_heads,
        num_key_value_heads=base.num_key_value_heads, head_dim=base.head_dim,
        tie_word_embeddings=False)


def merge_size(base: QwenConfig, circuit_hidden: int, circuit_layers: int,
               circuit_vocab: int, mean: int = 64, circuit_nonzeros: int = 0,
               circuit_bf16_params: int = 0, base_bf16: bool = True) -> SizeReport:
    """circuit_nonzeros: the compiled circuit's stored entries; circuit_bf16_params: the
    parameters of its layers' tensors whose values are all bfloat16 numbers (stored BF16);
    base_bf16: the base's layer weights are stored in bf16 (a release's)."""
    circuit = circuit_config(base, circuit_hidden, circuit_layers, circuit_vocab)
    layout = MergeLayout(base, circuit, one=0, mean=mean)
    merged = layout.merged_config()
    shapes = expected_shapes(merged)
    disk = {"circuit": 0, "base": 0, "embedding": 0}
    loader = 0
    circuit_sparse = 0
    for name, shape in shapes.items():
        n = int(np.prod(shape, dtype=np.int64))
        if name in (EMBED, LM_HEAD) or name == "model.norm.weight":
            disk["embedding"] += F32 * n
            loader += F32 * n
            continue
        index = int(name.split(".")[2])
        if index < circuit_layers:
            disk["circuit"] += F32 * n
            if len(shape) == 2 and n >= 1 << 16:
                circuit_sparse += 1
            else:
                loader += F32 * n
        else:
            disk["base"] += (2 if base_bf16 and not _is_norm(name) else F32) * n
            loader += F32 * n
    disk["circuit"] -= 2 * circuit_bf16_params
    loader += SPARSE_ENTRY * circuit_nonzeros
    state_logits = state_bytes(merged, 1000) + F32 * merged.vocab_size
    merge_peak = 12 * circuit_nonzeros + 3 * BLOCK_BYTES
    return SizeReport(base, merged, layout, parameters(base), parameters(circuit),
                      parameters(merged), disk, F32 * parameters(merged) + state_logits,
                      loader + state_logits, merge_peak)


# the machine circuit (slots=1) at the 2B layer shape, measured on the compiled machine
# (compiled.plan.hidden, n_layers, weights.nonzero_count(), and the parameters of its
# layer tensors that are bf16-exact in the merge: machine_bf16_parameters);
# `--compile` measures the current sources, tests/circuit/machine/test_layout_doc.py
# keeps these equal to them
MACHINE_HIDDEN, MACHINE_LAYERS, MACHINE_NONZEROS = 2015, 44, 19_505_343
MACHINE_BF16_PARAMS = 2_072_606_976


def bf16_parameters(weights, hidden: int) -> int:
    """Parameters of the circuit's layer tensors whose values are all bfloat16 numbers
    (with the merge's flag gains, powers of two, they are stored BF16:
    merge.tensors.MergedTensors.dtype), counted at the merged width `hidden`."""
    from qgpu.merge.writer import is_bf16
    from qgpu.model.sparse_tensor import SparseTensor

    own, total = weights.config.hidden_size, 0
    for name, tensor in weights.tensors.items():
        if not name.startswith("model.layers.") or _is_norm(name):
            continue
        values = tensor.csr().vals if isinstance(tensor, SparseTensor) else np.asarray(tensor)
        if is_bf16(values):
            total += int(np.prod([hidden if d == own else d for d in tensor.shape],
                                 dtype=np.int64))
    return total


def machine_bf16_parameters(weights) -> int:
    """bf16_parameters of the compiled machine at the width of its 2B merge."""
    layout = machine_size(hidden=weights.config.hidden_size,
                          layers=weights.config.num_hidden_layers).layout
    return bf16_parameters(weights, layout.hidden)


def machine_size(base: QwenConfig | None = None, hidden: int = MACHINE_HIDDEN,
                 layers: int = MACHINE_LAYERS, nonzeros: int = MACHINE_NONZEROS,
                 bf16_params: int = MACHINE_BF16_PARAMS) -> SizeReport:
    """A merge of the machine circuit (protocol vocabulary) into `base` (default
    Qwen3.5-2B's text model, bf16 as released)."""
    return merge_size(base or QwenConfig(), hidden, layers, VOCAB_SIZE,
                      circuit_nonzeros=nonzeros, circuit_bf16_params=bf16_params)


if __name__ == "__main__":
    import sys

    hidden, layers, nonzeros = MACHINE_HIDDEN, MACHINE_LAYERS, MACHINE_NONZEROS
    bf16 = MACHINE_BF16_PARAMS
    if "--compile" in sys.argv:
        from qgpu.circuit.machine.build import compile_machine
        from qgpu.merge.circuits import MERGE_SPEC

        compiled = compile_machine(spec=MERGE_SPEC, progress=True)  # the merged machine
        hidden, layers = compiled.plan.hidden, compiled.plan.n_layers
        nonzeros = compiled.weights.nonzero_count()
        bf16 = machine_bf16_parameters(compiled.weights)
    print(f"machine circuit: hidden {hidden}, {layers} layers, {nonzeros:,} nonzeros, "
          f"{bf16:,} parameters stored bf16 in the merge, merged into Qwen3.5-2B")
    if "--compile" in sys.argv:
        print(f"(merge.size's constants for this machine: MACHINE_HIDDEN, MACHINE_LAYERS, "
              f"MACHINE_NONZEROS = {hidden}, {layers}, {nonzeros:_}; MACHINE_BF16_PARAMS = "
              f"{bf16:_})")
    print(machine_size(hidden=hidden, layers=layers, nonzeros=nonzeros,
                       bf16_params=bf16).markdown())
