"""protocol.prompt: the launch prompt the host feeds: configuration, program image
(blocks, writeback sets, instructions, terminators) and initial memory.

    LAUNCH GRID(g) NTID(n)
    for each block b:  BLOCK(b) WB(r)...  { SLOT(i) OP(op) [DST(d)] operand... [OFF lo hi] }
                       TERM(t) [SRC(c)] TGT(x)...
    for each non-zero global word a:  ADDR(a) V(lo) V(hi)
    GO
An operand is SRC(r) or IMM V(lo) V(hi). The host computes nothing of the kernel: these
are the program's and the inputs' own bits.
"""

from __future__ import annotations

from qgpu.isa import machine as M
from qgpu.isa.program import Bar, Br, Exit, Imm, Jmp, Program
from qgpu.protocol.vocab import OP_NAMES, TERMS, split32, tok


def encode_block(prog: Program, b: int) -> list[int]:
    blk = prog.blocks[b]
    out = [tok("BLOCK", b)] + [tok("WB", r) for r in sorted(blk.writeback)]
    for s, stage in enumerate(blk.stages):
        for k, ins in enumerate(stage):
            out += [tok("SLOT", s * M.SLOTS + k), tok("OP", OP_NAMES.index(ins.op))]
            if ins.dst is not None:
                out.append(tok("DST", ins.dst))
            for o in ins.srcs:
                out += [tok("IMM"), *split32(o.value)] if isinstance(o, Imm) else \
                    [tok("SRC", o.n)]
            if ins.offset:
                out += [tok("OFF"), *split32(ins.offset)]
    t = blk.terminator
    if isinstance(t, Jmp):
        out += [tok("TERM", TERMS.index("jmp")), tok("TGT", t.target)]
    elif isinstance(t, Br):
        out += [tok("TERM", TERMS.index("br")), tok("SRC", t.cond.n),
                tok("TGT", t.taken), tok("TGT", t.not_taken)]
    elif isinstance(t, Bar):
        out += [tok("TERM", TERMS.index("bar")), tok("TGT", t.target)]
    elif isinstance(t, Exit):
        out += [tok("TERM", TERMS.index("exit"))]
    return out


def encode_prompt(prog: Program, grid: int, block: int, memory=()) -> list[int]:
    """The prompt of one launch: everything the model needs, nothing computed."""
    out = [tok("LAUNCH"), tok("GRID", grid - 1), tok("NTID", block - 1)]
    for b in range(len(prog.blocks)):
        out += encode_block(prog, b)
    for a, word in enumerate(memory):
        if M.u32(int(word)):
            out += [tok("ADDR", a), *split32(int(word))]
    out.append(tok("GO"))
    return out
