"""protocol.prompt: the launch prompt the host feeds (protocol v1, docs/protocol.md).

    LAUNCH GRID(g-1) NTID(n-1)
    per block b:          BLK(b) V(wb) TRM(kind, cond) V(t | f << 8)
      per instruction p:  INS(b, p) OPD(op, dst) SRCAB(a, b) SRCC(c)
                          [IMM(b, p, j) V(lo) V(hi)]  per non-zero immediate operand or offset
    per non-zero global word a:  ADDR(a) V(lo) V(hi)
    GO
Every ROM row's fields sit in one record of at most 4 tokens, the conv window (the circuit
writes the row at the record's last token with every field in the window, no latch and no
counting); IMM records follow their INS and name their row (b, p, j) themselves.

Operand selectors (`operand_selectors`) name where an operand comes from: the register
file (r), the result of an earlier stage's instruction p of the same block, or the
immediate. They are a static property of the program, like the writeback set; the host
computes nothing of the kernel.
"""

from __future__ import annotations

from qgpu.errors import ProgramError
from qgpu.isa import limits
from qgpu.isa.program import Bar, Block, Br, Imm, Jmp, Program
from qgpu.protocol.vocab import IMM_FIELDS, OP_NAMES, SEL_FWD, SEL_IMM, TERMS, split32, tok


def instruction_positions(blk: Block):
    """(p, stage, instr) for each instruction, p = stage * SLOTS + slot."""
    for s, stage in enumerate(blk.stages):
        for k, ins in enumerate(stage):
            yield s * limits.SLOTS + k, s, ins


def operand_selectors(blk: Block) -> dict[int, tuple[int, ...]]:
    """For each instruction position p, one selector per operand (see the module doc)."""
    last_writer: dict[int, int] = {}     # register -> position of its latest earlier writer
    out: dict[int, tuple[int, ...]] = {}
    for s, stage in enumerate(blk.stages):
        for k, ins in enumerate(stage):
            sels = []
            for o in ins.srcs:
                if isinstance(o, Imm):
                    sels.append(SEL_IMM)
                elif o.n in last_writer:
                    sels.append(SEL_FWD + last_writer[o.n])
                else:
                    sels.append(o.n)
            out[s * limits.SLOTS + k] = tuple(sels)
        for k, ins in enumerate(stage):   # a stage's writes are seen from the next stage on
            if ins.dst is not None:
                last_writer[ins.dst] = s * limits.SLOTS + k
    return out


def _terminator(blk: Block) -> list[int]:
    t = blk.terminator
    if isinstance(t, Bar) and t.scope != "cta":
        # the compiled model knows the CTA barrier only; the CUDA link rewrites a group
        # barrier to it where the CTA has at most 32 threads (all the model runs)
        raise ProgramError(f"bar.{t.scope}: the compiled model has only the CTA barrier "
                           f"(bar); a group barrier runs on the interpreter")
    cond = t.cond.n if isinstance(t, Br) else 0
    kind = TERMS.index({Jmp: "jmp", Br: "br", Bar: "bar"}.get(type(t), "exit"))
    taken = t.target if isinstance(t, Jmp | Bar) else t.taken if isinstance(t, Br) else 0
    other = t.not_taken if isinstance(t, Br) else 0
    return [tok("TRM", kind, cond), tok("V", taken | other << limits.MODEL_BLOCK_BITS)]


def encode_block(blk: Block, b: int) -> list[int]:
    wb = sum(1 << r for r in blk.writeback)
    out = [tok("BLK", b), tok("V", wb), *_terminator(blk)]
    sels = operand_selectors(blk)
    for p, _s, ins in instruction_positions(blk):
        if ins.op not in OP_NAMES:
            raise ProgramError(f"block {b}: {ins.op} has no protocol token (local memory, "
                               f"register spills: the model machine has none yet)")
        sel = list(sels[p]) + [0] * (3 - len(sels[p]))
        out += [tok("INS", b, p), tok("OPD", OP_NAMES.index(ins.op), ins.dst or 0),
                tok("SRCAB", sel[0], sel[1]), tok("SRCC", sel[2])]
        for j, o in enumerate(ins.srcs):
            if isinstance(o, Imm) and o.value:
                out += [tok("IMM", b, p, j), *split32(o.value)]
        if ins.offset:
            out += [tok("IMM", b, p, IMM_FIELDS.index("offset")), *split32(ins.offset)]
    return out


def encode_prompt(prog: Program, grid: int, block: int, memory=()) -> list[int]:
    """The prompt of one launch: everything the model needs, nothing computed."""
    out = [tok("LAUNCH"), tok("GRID", grid - 1), tok("NTID", block - 1)]
    for b, blk in enumerate(prog.blocks):
        out += encode_block(blk, b)
    for a, word in enumerate(memory):
        if limits.u32(int(word)):
            out += [tok("ADDR", a), *split32(int(word))]
    out.append(tok("GO"))
    return out

