"""machine.shared: shared memory of every CTA (ld.shared, st.shared).

- Storage: the memory table's rows 128..255 (machine.memory: the flat addresses
  `limits.model_flat_address("shared", j, cta)` = 128 + 32 cta + j, one table for both spaces),
  written at the second V of every `ADDR(a) V V` with a >= GLOBAL_WORDS (the trace's
  shared-space records; the prompt carries global memory only, so shared memory starts
  at 0, as in the interpreter).
- Address: alu_low decodes a + offset (+ 128 * the CTA: `alu.shared_base`) to the word
  for every addressed operation (spec.ADDRESSED_OPS) and sets its space bit for a
  shared-space one, so a shared access reads flat row 128 + 32 cta + j through the same
  read as a global one (`StageView.loaded`); the high MLP adds the read to the result,
  gated by ld.shared. Atomics of both spaces take M from the same read.
- Stores: machine.memory.store_records makes st.shared's records like st.global's, with
  bit 7 of the record's address set (flat address GLOBAL_WORDS + w); the emission writes
  `ADDR(128 + w) V V`, which writes the table's shared rows.
"""

from __future__ import annotations

from qgpu.circuit.ir import READ_SCALE
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.spec import SHARED_OPS


def build(view: StageView, lane: int) -> Extension | None:
    if "ld.shared" not in SHARED_OPS or not view.ins.has("ld.shared"):
        return None
    raw = view.loaded[lane]
    ins = view.ins

    def high(ctx, r):
        for i in range(32):
            ctx.step({ctx.d(raw)[i]: 1.0 / READ_SCALE}, 1, {r[i]: 2.0},
                     when=[ctx.v01(ins.op("ld.shared"))])

    return Extension([raw], high)
