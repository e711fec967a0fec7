"""machine.shared: shared memory of the one CTA (ld.shared, st.shared).

- Table: rows = 128, the flat addresses GLOBAL_WORDS + w (`M.flat_address("shared", w,
  cta)`; CTA 0's 32 words are rows 0..31, the other rows belong to CTAs the one-warp
  machine never runs), 32 bits; written at the second V of every `ADDR(a) V V` with
  a >= GLOBAL_WORDS (the trace's shared-space records; the prompt carries global memory
  only, so shared memory starts at 0, as in the interpreter). One copy per stage, a head
  per (position, lane) read, like the global memory table (machine.memory).
- Address: alu_low decodes a + offset to the word one-hot for every addressed operation
  (spec.ADDRESSED_OPS), so a shared access reads row w of this table with the same
  one-hot; the high MLP adds the read to the result, gated by ld.shared.
- Stores: machine.memory.store_records makes st.shared's records like st.global's, with
  bit 7 of the record's address set (flat address GLOBAL_WORDS + w); the emission writes
  `ADDR(128 + w) V V`, which writes this table.
"""

from __future__ import annotations

from qgpu.circuit.ir import READ_SCALE, Table
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.spec import SHARED_OPS
from qgpu.isa import machine as M

ROWS = M.GLOBAL_WORDS  # flat addresses 128..255 (the word one-hot has as many members)


class SharedTables:
    """The shared memory table's copies, one per stage."""

    def __init__(self, view: StageView):
        tt = view.extra["tt"]
        self.c, self.bk = view.c, view.bk
        parsed = tt.parsed

        def row(t: int):
            kind, f = parsed[t]
            return f[0] - M.GLOBAL_WORDS if kind == "ADDR" and f[0] >= M.GLOBAL_WORDS else None

        self.key = self.c.token_onehot("addr.shared_key", ROWS, row)
        self.copies: dict[int, Table] = {}

    def load(self, stage: int, position: int, lane: int, word):
        t = self.copies.get(stage)
        if t is None:
            t = self.c.table(f"shared.stage{stage}", rows=ROWS, width=32)
            t.write(self.key, [(self.bk.v_bits, 1), (self.bk.v_bits, 0)], key_lag=2)
            self.copies[stage] = t
        return t.read(word, name=f"shared.load.{position}.{lane}", restore=False).raw


def build(view: StageView, lane: int) -> Extension | None:
    if "ld.shared" not in SHARED_OPS or not view.ins.has("ld.shared"):
        return None
    tables = view.extra.get("shared")
    if tables is None:
        tables = view.extra["shared"] = SharedTables(view)
    p = view.ins.position
    raw = tables.load(p // M.SLOTS, p, lane, view.words[lane])
    ins = view.ins

    def high(ctx, r):
        for i in range(32):
            ctx.step({ctx.d(raw)[i]: 1.0 / READ_SCALE}, 1, {r[i]: 2.0},
                     when=[ctx.v01(ins.op("ld.shared"))])

    return Extension([raw], high)
