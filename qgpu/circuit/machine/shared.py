"""machine.shared: shared memory of the one CTA (ld.shared, st.shared).

- Table: rows = 128, the flat addresses GLOBAL_WORDS + w (`limits.flat_address("shared", w,
  cta)`; CTA 0's 32 words are rows 0..31, the other rows belong to CTAs the one-warp
  machine never runs), 32 bits; written at the second V of every `ADDR(a) V V` with
  a >= GLOBAL_WORDS (the trace's shared-space records; the prompt carries global memory
  only, so shared memory starts at 0, as in the interpreter). One copy per stage, a head
  per (position, lane) read, like the global memory table (machine.memory).
- Address: alu_low decodes a + offset to the word one-hot for every addressed operation
  (spec.ADDRESSED_OPS), so a shared access reads row w of this table with the same
  one-hot; the high MLP adds the read to the result, gated by ld.shared. The table has a
  presence bit (bit i of a word is the linear (raw_i + presence) / 2, as in the global
  table: the shared atomics sum it) and one read per (position, lane), shared by ld.shared
  and the atomics; `space_gates` makes each space's read 0 for the other space's
  operations (a -1 read gate), so an atomic's word M is the sum of both reads.
- Stores: machine.memory.store_records makes st.shared's records like st.global's, with
  bit 7 of the record's address set (flat address GLOBAL_WORDS + w); the emission writes
  `ADDR(128 + w) V V`, which writes this table.
"""

from __future__ import annotations

from qgpu.circuit.ir import BITS, READ_SCALE, Circuit, Signal, Table
from qgpu.circuit.machine.families import Extension, StageView
from qgpu.circuit.machine.logic import unit
from qgpu.circuit.machine.memory import address_key, word_key
from qgpu.circuit.machine.rom import Instruction
from qgpu.circuit.machine.spec import ADDRESSED_OPS, SHARED_OPS
from qgpu.isa import limits
from qgpu.primitives import plus

ROWS = limits.GLOBAL_WORDS  # flat addresses 128..255 (the word one-hot has as many members)


class SharedTables:
    """The shared memory table's copies, one per stage."""

    def __init__(self, view: StageView):
        self.c, self.bk = view.c, view.bk
        self.key = address_key(view.extra["tt"], "addr.shared", limits.GLOBAL_WORDS)
        self.copies: dict[int, Table] = {}
        self.reads: dict[tuple[int, int], Signal] = {}

    def load(self, view: StageView, lane: int) -> Signal:
        """The raw read (32 bits, presence) of lane's word at view's position (one per
        position and lane; 0 unless a shared-space operation)."""
        p = view.ins.position
        if (p, lane) not in self.reads:
            stage = p // limits.SLOTS
            t = self.copies.get(stage)
            if t is None:
                t = self.c.table(f"shared.stage{stage}", rows=ROWS, width=32, presence=True)
                t.write(self.key, [(self.bk.v_bits, 1), (self.bk.v_bits, 0)], key_lag=2)
                self.copies[stage] = t
            gates = space_gates(self.c, view.ins)
            self.reads[(p, lane)] = t.read(word_key(view.words[lane]),
                                           name=f"shared.load.{p}.{lane}",
                                           restore=False, gate=gates and gates[1]).raw
        return self.reads[(p, lane)]


def tables(view: StageView) -> SharedTables:
    if "shared" not in view.extra:
        view.extra["shared"] = SharedTables(view)
    return view.extra["shared"]


def space_gates(c: Circuit, ins: Instruction) -> tuple[Signal, Signal] | None:
    """Read gates of position ins (one unit per position, from the op bits): (global, shared)
    = (+1, -1) for a global-space or any other operation, (-1, +1) for a shared-space one;
    None when no shared-space operation is compiled in (no gates)."""
    names = [n for n in ADDRESSED_OPS if ".shared" in n and ins.has(n)]
    if not names:
        return None
    p = ins.position
    if f"space.global.{p}" not in c.signals:
        def body(ctx, outs):
            g, s = outs
            ctx.constant({g[0]: 2.0})
            ctx.step(plus(*(ctx.v01(ins.op(n)) for n in names)), 1, {g[0]: -2.0, s[0]: 2.0})

        unit(c, f"space.{p}", [ins.ops], [(f"space.global.{p}", BITS, 1),
                                          (f"space.shared.{p}", BITS, 1)], body)
    return c.signals[f"space.global.{p}"], c.signals[f"space.shared.{p}"]


def build(view: StageView, lane: int) -> Extension | None:
    if "ld.shared" not in SHARED_OPS or not view.ins.has("ld.shared"):
        return None
    raw = tables(view).load(view, lane)
    ins = view.ins

    def high(ctx, r):
        for i in range(32):
            ctx.step({ctx.d(raw)[i]: 1.0 / READ_SCALE}, 1, {r[i]: 2.0},
                     when=[ctx.v01(ins.op("ld.shared"))])

    return Extension([raw], high)
