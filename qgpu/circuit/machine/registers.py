"""machine.registers: the register file: per lane a table of MAX_WARPS x 16 rows (row
16 w + r: register r of warp w) x 32 bits (lo, hi), written when a block's results come
back as tokens and read at EXEC for every operand.

Write: the n-th value token after R(r) (n = 1..8) is half (n-1) % 2 of the
((n-1) // 2)-th active lane. The row is written at the hi token (n even) with the lo
token one position back (conv lag 1): key (w, r) from the EXEC and record latches, the
count and the lane order (bookkeeping); every other token's key is the none member (no
write).

Reads happen at EXEC: the decoder's query (one-hot of r) and the EXEC token's warp w make
the row's one-hot (w, r) in a unit placed just before the read (it waits for the read's
gate), so that the wide one-hots live for a layer, not from the ROM fetch on.
A lane's row never written reads 0, the interpreter's initial register value, and the
lanes live in separate heads, so a read is always a whole written row or nothing
(docs/circuit-plan.md wanted one head for 4 lanes, but a row shared by lanes is written
lane by lane, which one delta-rule write per position cannot do without clobbering the
other lanes' columns).

Reads: a copy per (lane, stage) holding that stage's operand reads (3 per position), and
a copy per lane for the branch condition.
"""

from __future__ import annotations

from collections.abc import Sequence

from qgpu.circuit.ir import ONEHOT, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping
from qgpu.circuit.machine.logic import true_member, unit
from qgpu.circuit.machine.rom import BlockRow, Instruction
from qgpu.isa import limits

ROWS = limits.MAX_WARPS * limits.REGS  # row w * REGS + r


def write_key(c: Circuit, bk: Bookkeeping, lane: int, name: str,
              after: Sequence[Signal] = ()) -> Signal:
    """Lane's one-hot register row (w, r) written at this token (none: no write), made
    for one table just before it (the unit waits for the signals `after`, which it does
    not otherwise read), so that the 65-dim key lives for a layer per table instead of
    across the whole pipeline."""
    def body(ctx, outs):
        (key,) = outs
        for w in range(limits.MAX_WARPS):
            for r in range(1, limits.REGS):
                for j in range(LANES):
                    ctx.step(ctx.v01(bk.rec_reg_onehot.member(r)), 1,
                             true_member(key, w * limits.REGS + r),
                             when=[ctx.v01(bk.count.member(2 * j + 2)),
                                   ctx.v01(bk.lane_rank, lane * LANES + j),
                                   ctx.v01(bk.rec_is_r),
                                   ctx.v01(bk.cur_warp_onehot.member(w))])

    (key,) = unit(c, f"rf.key.{name}", [bk.rec_reg_onehot, bk.count, bk.lane_rank,
                                         bk.rec_is_r, bk.cur_warp_onehot, *after],
                  [(f"rf.key.{name}", ONEHOT, ROWS)], body)
    return key


class RegisterFile:
    """The per-lane tables; `stage_reads` and `condition_reads` add read copies."""

    def __init__(self, c: Circuit, bk: Bookkeeping):
        self.c, self.bk = c, bk

    def _query(self, query: Signal, name: str, after: Sequence[Signal]) -> Signal:
        """One-hot row (w, r) of the EXEC token's warp w and register query r (made
        after the signals `after`)."""
        bk = self.bk

        def body(ctx, outs):
            (out,) = outs
            for w in range(limits.MAX_WARPS):
                for r in range(1, limits.REGS):
                    ctx.step(ctx.v01(query.member(r)), 1, true_member(out, w * limits.REGS + r),
                             when=[ctx.v01(bk.exec_warp.member(w))])

        (out,) = unit(self.c, f"rf.query.{name}", [query, bk.exec_warp, *after],
                      [(f"rf.query.{name}", ONEHOT, ROWS)], body)
        return out

    def _table(self, lane: int, name: str, after: Sequence[Signal]):
        t = self.c.table(name, rows=ROWS, width=32)
        t.write(write_key(self.c, self.bk, lane, name, after),
                [(self.bk.v_bits, 1), (self.bk.v_bits, 0)])
        return t

    def stage_reads(self, k: int, ins: list[Instruction], after: Sequence[Signal]) -> dict:
        """{(p, j, lane): bits} for the operands of stage k's positions (0 when an operand
        is not a register). after: signals that exist only when the stage is about to
        run (the previous stage's results), so that the reads, their queries and keys
        and their dims wait for them."""
        queries = {(i.position, j): self._query(i.queries[j], f"{i.position}.{j}", after)
                   for i in ins for j in range(3)}
        out = {}
        for lane in range(LANES):
            t = self._table(lane, f"rf.{lane}.stage{k}", after)
            for i in ins:
                for j in range(3):
                    out[(i.position, j, lane)] = t.read(
                        queries[(i.position, j)], name=f"rf.{lane}.{i.position}.{j}").bits
        return out

    def condition_reads(self, block: BlockRow, after: Sequence[Signal]) -> list[Signal]:
        """Per lane: the bits of br's condition register as the block began (read at EXEC,
        where the branch outcome is computed and latched; after `after`)."""
        query = self._query(block.cond_query, "cond", after)
        return [self._table(lane, f"rf.{lane}.cond", after).read(
            query, name=f"rf.{lane}.cond").bits for lane in range(LANES)]
