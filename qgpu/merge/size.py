"""merge.size: what a merge costs, computed from shapes alone (no weights needed).

`merge_size(base_config, circuit_hidden, circuit_layers, circuit_vocab)` builds the merged
layout for a circuit of that size and counts parameters and bytes (float32), the peak
memory of `merge_checkpoint` (the compiled circuit, dense as the compiler returns it, plus
the blocks in flight) and of inference (the weights, the recurrent and conv states, a KV
cache per 1,000 tokens of context, one row of logits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.merge.layout import MergeLayout
from qgpu.merge.writer import BLOCK_BYTES
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import expected_shapes

F32 = 4


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


@dataclass
class SizeReport:
    base: QwenConfig
    merged: QwenConfig
    layout: MergeLayout
    base_parameters: int
    circuit_parameters: int  # the compiled circuit on its own (dense)
    merged_parameters: int
    merge_peak_bytes: int
    inference_bytes: int  # weights + state at 1,000 tokens + logits

    def rows(self) -> list[tuple[str, str]]:
        gib = 2 ** 30
        lay = self.layout
        return [
            ("hidden (base + circuit + flag + ballast)",
             f"{lay.hidden} = {lay.base_hidden} + {lay.circuit_hidden} + 1 + "
             f"{len(lay.ballast)}"),
            ("layers (circuit + base)", f"{self.merged.num_hidden_layers} = "
             f"{lay.circuit_layers} + {self.base.num_hidden_layers}"),
            ("vocabulary (text + GPU)", f"{self.merged.vocab_size:,} = "
             f"{self.base.vocab_size:,} + {lay.circuit.vocab_size:,}"),
            ("base parameters (text model)", f"{self.base_parameters / 1e9:.3f} B"),
            ("merged parameters", f"{self.merged_parameters / 1e9:.3f} B"),
            ("merged checkpoint, float32", f"{F32 * self.merged_parameters / gib:.1f} GiB"),
            ("of which embedding + untied head",
             f"{2 * F32 * self.merged.vocab_size * lay.hidden / gib:.1f} GiB"),
            ("peak RAM of the merge (circuit + blocks)", f"{self.merge_peak_bytes / gib:.2f} GiB"),
            ("inference RAM (weights, state at 1k tokens, logits)",
             f"{self.inference_bytes / gib:.1f} GiB"),
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
               circuit_vocab: int, mean: int = 64) -> SizeReport:
    circuit = circuit_config(base, circuit_hidden, circuit_layers, circuit_vocab)
    layout = MergeLayout(base, circuit, one=0, mean=mean)
    merged = layout.merged_config()
    circuit_params = parameters(circuit)
    merged_params = parameters(merged)
    # the merge holds the dense compiled circuit, one output block, the base rows feeding
    # it (widened to float32) and numpy temporaries of the same size
    merge_peak = F32 * circuit_params + 3 * BLOCK_BYTES
    inference = (F32 * merged_params + state_bytes(merged, 1000) + F32 * merged.vocab_size)
    return SizeReport(base, merged, layout, parameters(base), circuit_params, merged_params,
                      merge_peak, inference)


if __name__ == "__main__":
    qwen2b = QwenConfig()  # Qwen3.5-2B's text model
    for hidden, layers, vocab in ((1024, 22, 73_737), (2048, 45, 73_737)):
        print(f"\ncircuit hidden {hidden}, {layers} layers, {vocab:,} tokens")
        print(merge_size(qwen2b, hidden, layers, vocab).markdown())
