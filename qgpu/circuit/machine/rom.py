"""machine.rom: the program ROM, written from the prompt's records and fetched at EXEC.

Tables (rows = blocks, every row written at its record's last token with all fields in
the conv window, keys straight from the embedding; docs/protocol.md):
- `rom.ins.P`: instruction position P of each block: op (7 bits), dst (4), operand
  selectors a, b, c (6 each); written at SRCC (INS 3 back, OPD 2, SRCAB 1);
- `rom.imm.P.J`: operand J's immediate (32 bits), written at the second V of
  IMM(b, P, J) V V; a row never written reads 0, the value of an absent immediate;
- `rom.block`: writeback mask (16), terminator kind (2) and register (4), targets
  (8 + 8); written at the last V of BLK V(wb) TRM V(targets).
Every key and query is a binary row (ir.BinaryKey: 8 bits and a valid bit; the ROM's
256 rows take two banks of heads per read). Instruction rows are read with the EXEC
token's own block (layer 0); the block row with the latched current block (read at every
position: R/V need the writeback mask, END the targets).

Decoders turn the fetched fields into what later units gate on: one bit per supported
operation, the destination one-hot, per operand a register query (the register file's
binary row: r, the EXEC token's warp, and a valid bit, off for r0, an immediate or a
forwarded operand) and forward bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from qgpu.circuit.ir import BITS, ONEHOT, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import Bookkeeping, TokenTable
from qgpu.circuit.machine.logic import true_bit, true_member, unit
from qgpu.circuit.machine.spec import IMM_OPERANDS, OFFSET, MachineSpec
from qgpu.isa import limits
from qgpu.protocol.vocab import OP_NAMES, SEL_FWD, TERMS

OP_BITS, REG_BITS, SEL_BITS = 7, 4, 6
B = limits.MODEL_BLOCK_BITS  # bits of a block number
QUERY_BITS = REG_BITS + 2 + 1  # a register query: r, the warp, valid


@dataclass
class Instruction:
    """Instruction position P as fetched and decoded at EXEC."""

    position: int
    ops: Signal  # bits, one per compiled-in operation (MachineSpec.op_names)
    dst: Signal  # dst bits
    dst_onehot: Signal
    queries: list[Signal]  # per operand: register query, binary: r (4), w (2), valid
    forwards: list[Signal | None]  # per operand: bits, one per earlier position
    imms: list[Signal]  # per operand: immediate bits (0 when absent); set by `immediates`
    offset: Signal | None = None  # memory ops' address offset; set by `immediates`
    names: tuple[str, ...] = ()  # the compiled-in operations, in the order of `ops`

    def has(self, *names: str) -> bool:
        """Whether any of these operations is compiled in (families skip absent ones)."""
        return any(n in self.names for n in names)

    def op(self, name: str):
        if name not in self.names:
            raise KeyError(f"operation {name!r} is not compiled into this machine")
        return self.ops[self.names.index(name)]


@dataclass
class BlockRow:
    wb: Signal  # writeback mask bits
    kinds: Signal  # bits: jmp, br, bar, exit
    cond_query: Signal  # br's condition register, binary: r (4), w (2), valid (r != 0)
    cond: Signal  # its bits
    taken: Signal  # target bits (jmp/bar/br taken)
    not_taken: Signal


def rom(c: Circuit, tt: TokenTable, bk: Bookkeeping, spec: MachineSpec):
    """fetch(p, after) -> Instruction: position p's ROM table, read at EXEC and decoded;
    its write key (INS's block) is decoded after the signals `after` (the previous
    stage's register reads; none for the first stage: a one-hot from the embedding,
    fetched in layer 0), so that the fetch and the decoded fields of a stage come shortly
    before the stage runs instead of all in layer 0."""
    op_bits = tt.field_bits("opd.op", "OPD", 0, OP_BITS)
    dst_bits = tt.field_bits("opd.dst", "OPD", 1, REG_BITS)
    sel_a = tt.field_bits("srcab.a", "SRCAB", 0, SEL_BITS)
    sel_b = tt.field_bits("srcab.b", "SRCAB", 1, SEL_BITS)
    sel_c = tt.field_bits("srcc.c", "SRCC", 0, SEL_BITS)

    def fetch(p: int, after: Sequence[Signal] = ()) -> Instruction:
        key = tt.late_key(f"ins.key.{p}", "INS", limits.MODEL_ROM_BLOCKS, after, 0,
                          where={1: p})
        table = c.table(f"rom.ins.{p}", rows=limits.MODEL_ROM_BLOCKS,
                        width=OP_BITS + REG_BITS + 3 * SEL_BITS)
        table.write(key, [(op_bits, 2), (dst_bits, 2), (sel_a, 1), (sel_b, 1), (sel_c, 0)],
                    key_lag=3)
        row = table.read(bk.exec_block, name=f"ins.{p}").bits
        return _decode(c, spec, p, row, bk.exec_warp_bits)

    return fetch


def immediates(c: Circuit, tt: TokenTable, bk: Bookkeeping, ins: Instruction,
               after: Sequence[Signal] = ()) -> None:
    """Fetch the immediates of `ins` (sets ins.imms and ins.offset). after: signals that
    exist only when the stage is about to run: the tables' write keys are decoded after
    them (`TokenTable.late_onehot`), so the keys, the reads and their dims wait."""
    p = ins.position
    for j in (*range(IMM_OPERANDS), OFFSET):
        key = tt.late_key(f"imm.key.{p}.{j}", "IMM", limits.MODEL_ROM_BLOCKS, after, 0,
                          where={1: p, 2: j})
        table = c.table(f"rom.imm.{p}.{j}", rows=limits.MODEL_ROM_BLOCKS, width=32)
        table.write(key, [(bk.v_bits, 1), (bk.v_bits, 0)], key_lag=2)
        bits = table.read(bk.exec_block, name=f"imm.{p}.{j}").bits
        if j == OFFSET:
            ins.offset = bits
        else:
            ins.imms.append(bits)


def _query(ctx, reg, warp, out) -> None:
    """A register-file query (machine.registers: binary row r | w, then valid): r from
    the low 4 bits of `reg` (a selector or register field), w from the EXEC token's warp
    bits, valid when `reg` names a register 1..15 (r0 reads 0: no query)."""
    for i in range(REG_BITS):
        ctx.linear(ctx.v01(reg, i), {out[i]: 2.0})
    for i in range(len(warp)):
        ctx.linear(ctx.v01(warp, i), {out[REG_BITS + i]: 2.0})
    for q in range(1, limits.REGS):
        ctx.step(*ctx.equals(reg, q), true_bit(out[QUERY_BITS - 1]))


def _decode(c: Circuit, spec: MachineSpec, p: int, row, warp) -> Instruction:
    op, dst = row[0:OP_BITS], row[OP_BITS:OP_BITS + REG_BITS]
    sels = [row[OP_BITS + REG_BITS + SEL_BITS * j:OP_BITS + REG_BITS + SEL_BITS * (j + 1)]
            for j in range(3)]
    earlier = spec.earlier(p)
    names = spec.op_names
    outputs = [(f"ins.{p}.ops", BITS, len(names)),
               (f"ins.{p}.dst_onehot", ONEHOT, limits.REGS)]
    outputs += [(f"ins.{p}.query.{j}", BITS, QUERY_BITS) for j in range(3)]
    if earlier:
        outputs += [(f"ins.{p}.forward.{j}", BITS, len(earlier)) for j in range(3)]

    def body(ctx, outs):
        for k, name in enumerate(names):
            ctx.step(*ctx.equals(op, OP_NAMES.index(name)), true_bit(outs[0][k]))
        for q in range(limits.REGS):
            ctx.step(*ctx.equals(dst, q), true_member(outs[1], q))
        for j, sel in enumerate(sels):
            _query(ctx, sel, warp, outs[2 + j])
            for i, src in enumerate(earlier):
                ctx.step(*ctx.equals(sel, SEL_FWD + src), true_bit(outs[5 + j][i]))

    sigs = unit(c, f"decode.ins.{p}", [op, dst, *sels, warp], outputs, body)
    forwards = sigs[5:8] if earlier else [None, None, None]
    return Instruction(p, sigs[0], dst, sigs[1], sigs[2:5], forwards, [], names=names)


def block_row(c: Circuit, tt: TokenTable, bk: Bookkeeping) -> BlockRow:
    key = tt.late_key("blk.key", "BLK", limits.MODEL_ROM_BLOCKS)
    kind = tt.field_bits("trm.kind", "TRM", 0, 2)
    cond = tt.field_bits("trm.cond", "TRM", 1, REG_BITS)
    # the targets: the record's last V, taken | other << BLOCK_BITS (docs/protocol.md)
    table = c.table("rom.block", rows=limits.MODEL_ROM_BLOCKS, width=16 + 2 + REG_BITS + 2 * B)
    table.write(key, [(bk.v_bits, 2), (kind, 1), (cond, 1), (bk.v_bits[0:2 * B], 0)], key_lag=3)
    row = table.read(bk.cur_block_key, name="block").bits
    kind_r, cond_r = row[16:18], row[18:22]

    def body(ctx, outs):
        kinds, query = outs
        for k in range(len(TERMS)):
            ctx.step(*ctx.equals(kind_r, k), true_bit(kinds[k]))
        _query(ctx, cond_r, bk.exec_warp_bits, query)

    kinds, cond_query = unit(c, "decode.block", [kind_r, cond_r, bk.exec_warp_bits],
                             [("block.kinds", BITS, len(TERMS)),
                              ("block.cond_query", BITS, QUERY_BITS)], body)
    return BlockRow(row[0:16], kinds, cond_query, cond_r, row[22:22 + B], row[22 + B:22 + 2 * B])
