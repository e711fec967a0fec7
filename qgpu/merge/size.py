"""merge.size: what a merge costs, computed from shapes alone (no weights needed).

`merge_size(base_config, circuit_hidden, circuit_layers, circuit_vocab)` builds the merged
layout for a circuit of that size and counts parameters and bytes (float32), the peak
memory of `merge_checkpoint` (the compiled circuit, dense or sparse, plus the blocks in
flight) and of inference (the weights, the recurrent and conv states, a KV
cache per 1,000 tokens of context, one row of logits). `machine_size()`: the machine
circuit merged into Qwen3.5-2B (`python -m qgpu.merge.size [--compile]`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.merge.layout import MergeLayout
from qgpu.merge.writer import BLOCK_BYTES
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import expected_shapes
from qgpu.protocol.vocab import VOCAB_SIZE

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
            ("circuit parameters alone (dense)", f"{self.circuit_parameters / 1e9:.3f} B"),
            ("circuit checkpoint alone (export-machine), float32",
             f"{F32 * self.circuit_parameters / gib:.1f} GiB"),
            ("merged parameters", f"{self.merged_parameters / 1e9:.3f} B"),
            ("merged checkpoint, float32", f"{F32 * self.merged_parameters / gib:.1f} GiB"),
            ("of which embedding + untied head",
             f"{2 * F32 * self.merged.vocab_size * lay.hidden / gib:.1f} GiB"),
            ("RAM of the merge (circuit held + blocks; compiling adds its own peak)",
             f"{self.merge_peak_bytes / gib:.2f} GiB"),
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
               circuit_vocab: int, mean: int = 64,
               circuit_nonzeros: int | None = None) -> SizeReport:
    """circuit_nonzeros: the compiled circuit's stored entries when it is held sparse (as
    the compiler returns it now: ~12 bytes an entry); None: held dense."""
    circuit = circuit_config(base, circuit_hidden, circuit_layers, circuit_vocab)
    layout = MergeLayout(base, circuit, one=0, mean=mean)
    merged = layout.merged_config()
    circuit_params = parameters(circuit)
    merged_params = parameters(merged)
    # the merge holds the dense compiled circuit, one output block, the base rows feeding
    # it (widened to float32) and numpy temporaries of the same size
    held = F32 * circuit_params if circuit_nonzeros is None else 12 * circuit_nonzeros
    merge_peak = held + 3 * BLOCK_BYTES
    inference = (F32 * merged_params + state_bytes(merged, 1000) + F32 * merged.vocab_size)
    return SizeReport(base, merged, layout, parameters(base), circuit_params, merged_params,
                      merge_peak, inference)


# the machine circuit (slots=1) at the 2B layer shape, measured (compiled.plan.hidden,
# n_layers) when the merge was written; `--compile` measures the current sources
MACHINE_HIDDEN, MACHINE_LAYERS, MACHINE_NONZEROS = 2386, 43, 22_605_805


def machine_size(base: QwenConfig | None = None, hidden: int = MACHINE_HIDDEN,
                 layers: int = MACHINE_LAYERS, nonzeros: int = MACHINE_NONZEROS
                 ) -> SizeReport:
    """A merge of the machine circuit (protocol vocabulary) into `base` (default
    Qwen3.5-2B's text model)."""
    return merge_size(base or QwenConfig(), hidden, layers, VOCAB_SIZE,
                      circuit_nonzeros=nonzeros)


if __name__ == "__main__":
    import sys

    hidden, layers, nonzeros = MACHINE_HIDDEN, MACHINE_LAYERS, MACHINE_NONZEROS
    if "--compile" in sys.argv:
        from qgpu.circuit.machine.build import compile_machine

        compiled = compile_machine(progress=True)   # the default machine (or the cache's)
        hidden, layers = compiled.plan.hidden, compiled.plan.n_layers
        nonzeros = compiled.weights.nonzero_count()
    print(f"machine circuit: hidden {hidden}, {layers} layers, {nonzeros:,} nonzeros, "
          f"merged into Qwen3.5-2B")
    print(machine_size(hidden=hidden, layers=layers, nonzeros=nonzeros).markdown())
