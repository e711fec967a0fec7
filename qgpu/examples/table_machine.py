"""examples.table_machine: a small compiled model built only from the primitives, used by
the primitive tests and the engine benchmark (not the qgpu machine itself).

Tokens: WRITE(a, v) stores the `bits`-bit value v in row a of a table held by every GDN
layer (in `copies` heads each, written together) and reads row a back (write, then
read); READ(a, c) reads row a through copy c; CLEAR empties every table. The model
answers each token with VAL(v) for the value read, or NONE when nothing was read (an
unwritten row, or CLEAR). Each GDN layer's MLP restores the bits it read with steps and
the output head reads the last layer's restored bits. A zero full-attention layer at the
end lets transformers cache the stack.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights
from qgpu.primitives import MlpWriter, Threshold, plus
from qgpu.primitives.gdn_memory import row_memory
from qgpu.primitives.mlp import bit_from_step, step
from qgpu.primitives.norm import NormLedger


@dataclass
class TableMachine:
    weights: QwenWeights
    rows: int
    bits: int
    copies: int
    thresholds: list[Threshold] = field(default_factory=list)

    # token ids
    def write(self, row: int, value: int) -> int:
        return row * 2 ** self.bits + value

    def read(self, row: int, copy: int = 0) -> int:
        return self.rows * 2 ** self.bits + copy * self.rows + row

    @property
    def clear(self) -> int:
        return self.rows * 2 ** self.bits + self.copies * self.rows

    @property
    def none(self) -> int:
        return self.clear + 1

    def val(self, value: int) -> int:
        return self.clear + 2 + value


def build_table_machine(rows: int = 8, bits: int = 4, copies: int = 2, gdn_layers: int = 1,
                        hidden: int = 128, heads: int = 4, head_dim: int = 32,
                        intermediate: int = 128) -> TableMachine:
    n_tokens = rows * 2 ** bits + copies * rows + 2 + 2 ** bits
    config = QwenConfig(hidden_size=hidden, num_hidden_layers=gdn_layers + 1,
                        layer_types=[LINEAR] * gdn_layers + [FULL], vocab_size=n_tokens,
                        intermediate_size=intermediate, linear_num_key_heads=heads,
                        linear_num_value_heads=heads, linear_key_head_dim=head_dim,
                        linear_value_head_dim=head_dim, num_attention_heads=2,
                        num_key_value_heads=1, head_dim=32, tie_word_embeddings=False)
    w = QwenWeights.zeros(config)
    dims = iter(range(hidden))

    def take(n):
        return [next(dims) for _ in range(n)]

    one, ballast, filler, spare, clear = take(1)[0], take(4), take(1)[0], take(1)[0], take(1)[0]
    waddr, data = take(rows), take(bits)
    raddr = [take(rows) for _ in range(copies)]
    ledger = NormLedger(hidden, one, ballast)
    machine = TableMachine(w, rows, bits, copies)

    def bits_of(v):
        return {d: (1.0 if v >> i & 1 else -1.0) for i, d in enumerate(data)}

    emb = np.zeros((n_tokens, hidden), np.float32)
    for a in range(rows):
        for v in range(2 ** bits):
            emb[machine.write(a, v)] = ledger.embedding_row(
                {waddr[a]: 1, raddr[0][a]: 1, **bits_of(v)})
        for c in range(copies):
            emb[machine.read(a, c)] = ledger.embedding_row({raddr[c][a]: 1, filler: 1,
                                                            **bits_of(0)})
    emb[machine.clear] = ledger.embedding_row({clear: 1, filler: 1, **bits_of(0)})
    for t in range(machine.none, n_tokens):  # output-only tokens
        emb[t] = ledger.embedding_row({filler: 1, spare: 1, **bits_of(0)})
    w[EMBED] = emb
    ledger.set_norm_weights(w)

    restored: list[int] = []
    present = -1
    for layer in range(gdn_layers):
        reads = [take(bits) for _ in range(copies)]
        row_memory(w, layer, list(range(copies)), one=one, write_address=waddr, data=data,
                   read_addresses=raddr, outputs=reads, clear=clear)
        mlp = MlpWriter(w, layer)
        restored, present = take(bits), take(1)[0]
        for m in range(bits):  # at most one copy reads per token: the sum is the read
            bit_from_step(mlp, {r[m]: 1.0 for r in reads}, 1.0, restored[m], one,
                          name=f"restore bit {m}")
        either = {r[0]: 1.0 for r in reads}
        step(mlp, either, 1.0, {present: 2.0}, one, name="present +")
        step(mlp, {d: -c for d, c in either.items()}, 1.0, {present: 2.0}, one,
             name="present -")
        mlp.constant({present: -1.0}, one)
        machine.thresholds += mlp.thresholds

    head = np.zeros((n_tokens, hidden), np.float32)
    for v in range(2 ** bits):  # VAL(v): 2*bits when the read matches, <= 2*bits - 2 else
        row = plus({d: (1.0 if v >> i & 1 else -1.0) for i, d in enumerate(restored)},
                   {present: float(bits)})
        for d, c in row.items():
            head[machine.val(v), d] = c
    head[machine.none, one] = 2 * bits - 1  # wins when nothing was read (present = -1)
    w[LM_HEAD] = head
    return machine
