"""machine.registers: the register file: per lane a table of MAX_WARPS x 16 rows (row
16 w + r: register r of warp w) x 32 bits (lo, hi), written when a block's results come
back as tokens and read at EXEC for every operand.

Write: the n-th value token after R(r) (n = 1..8) is half (n-1) % 2 of the
((n-1) // 2)-th active lane. The row is written at the hi token (n even) with the lo
token one position back (conv lag 1): key (w, r) from the EXEC and record latches, the
count and the lane order (bookkeeping); every other token's key is the none member (no
write).

Keys and queries are binary rows (ir.BinaryKey: 6 bits and a valid bit, decoded in the
tables' key and query projections): the write key's bits come from the record and EXEC
latches, one valid bit per lane; a read's query is the decoder's register bits and the
EXEC token's warp w (rom._decode, valid for a register operand r != 0). The write key is
made once per stage just before that stage's tables (it waits for the previous stage's
results), so that the tables, their reads and the read dims wait too.
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

from qgpu.circuit.ir import BITS, BinaryKey, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.circuit.machine.rom import BlockRow, Instruction
from qgpu.isa import limits
from qgpu.primitives import plus, scaled

ROWS = limits.MODEL_MAX_WARPS * limits.REGS  # row w * REGS + r


ROW_BITS = 6  # a row number in binary: r (4 bits), then w (2 bits)


def key_of(bits: Signal, valid: int) -> BinaryKey:
    """The binary row (ir.BinaryKey) of a key or query signal: its first ROW_BITS bits,
    and its bit `valid` as the valid bit."""
    return BinaryKey(bits[0:ROW_BITS], bits[valid])


def write_key(c: Circuit, bk: Bookkeeping, name: str, after: Sequence[Signal] = ()) -> Signal:
    """The register row (w, r) written at this token as binary bits (r from the record
    latch, w from the EXEC latch), then per lane L a valid bit: +1 when this token is the
    hi value of lane L in an R record of a register r != 0; made for one stage's tables
    just before them (the unit waits for the signals `after`, which it does not
    otherwise read), so that the tables wait too: ROW_BITS + LANES dims for a layer."""
    def body(ctx, outs):
        (key,) = outs
        for i in range(4):
            ctx.linear(ctx.v01(bk.rec_reg, i), {key[i]: 2.0})
        for i in range(2):
            ctx.linear(ctx.v01(bk.cur_warp, i), {key[4 + i]: 2.0})
        r0 = scaled(ctx.v01(bk.rec_reg_onehot.member(0)), -1)
        for lane in range(LANES):
            for j in range(LANES):
                ctx.step(plus(ctx.v01(bk.count.member(2 * j + 2)), r0), 1,
                         true_bit(key[ROW_BITS + lane]),
                         when=[ctx.v01(bk.lane_rank, lane * LANES + j), ctx.v01(bk.rec_is_r)])

    (key,) = unit(c, f"rf.key.{name}", [bk.rec_reg, bk.cur_warp, bk.rec_reg_onehot, bk.count,
                                         bk.lane_rank, bk.rec_is_r, *after],
                  [(f"rf.key.{name}", BITS, ROW_BITS + LANES)], body)
    return key


class RegisterFile:
    """The per-lane tables; `stage_reads` and `condition_reads` add read copies."""

    def __init__(self, c: Circuit, bk: Bookkeeping):
        self.c, self.bk = c, bk

    def _table(self, lane: int, name: str, key: Signal):
        t = self.c.table(name, rows=ROWS, width=32)
        t.write(key_of(key, ROW_BITS + lane), [(self.bk.v_bits, 1), (self.bk.v_bits, 0)])
        return t

    def stage_reads(self, k: int, ins: list[Instruction], after: Sequence[Signal]) -> dict:
        """{(p, j, lane): bits} for the operands of stage k's positions (0 when an operand
        is not a register). after: signals that exist only when the stage is about to
        run (the previous stage's results), so that the reads, their keys and their dims
        wait for them. The queries are the decoder's binary (w, r) rows (rom._decode)."""
        key = write_key(self.c, self.bk, f"stage{k}", after)
        out = {}
        for lane in range(LANES):
            t = self._table(lane, f"rf.{lane}.stage{k}", key)
            for i in ins:
                for j in range(3):
                    out[(i.position, j, lane)] = t.read(
                        key_of(i.queries[j], ROW_BITS), name=f"rf.{lane}.{i.position}.{j}").bits
        return out

    def condition_reads(self, block: BlockRow, after: Sequence[Signal]) -> list[Signal]:
        """Per lane: the bits of br's condition register as the block began (read at EXEC,
        where the branch outcome is computed and latched; the tables wait for `after`)."""
        key = write_key(self.c, self.bk, "cond", after)
        return [self._table(lane, f"rf.{lane}.cond", key).read(
            key_of(block.cond_query, ROW_BITS), name=f"rf.{lane}.cond").bits
            for lane in range(LANES)]
