"""fuzz.model_programs: random machine programs (qgpu.isa) for the model fuzzer
(qgpu/fuzz/model_launches.py), valid under Program.validate and spec.check_launch, that
terminate and never fault.

A program is a structured region laid out in block order: plain blocks, if/else
diamonds (`br` on a random register: lanes diverge and reconverge at the join), bounded
loops, early exits of some lanes, and at most one `bar` block (so lanes never wait at
different barriers). Every edge goes forward except a loop's back edge, which is taken
while the lane's counter (r15, r14 by nesting depth; set to 1..4 per lane before the
loop, decremented at its latch, never written by anything else) is not zero: every
launch terminates.

Blocks hold 1..STAGES stages of one random operation each (slots = 1), drawn from the
model machine's operations (`MachineSpec.op_names`): operands are registers (the
results of earlier stages of the block, i.e. forwarded operands, registers written in
earlier blocks, r0, the loop counters) or 32-bit immediates biased to edge values.
Memory operations address `[rA+off]` with rA masked in an earlier stage of the block
(`and rA, rX, mask`) or `[r0+off]`, aligned and in bounds for their space; reads come
before writes and a block writes at most MAX_BLOCK_WRITES words per lane. The writeback
set is either every register the block writes (each result shows in the trace) or
liveness's. Random global memory contents come with each case. A share of the cases
(`high`) places the program at blocks 48..127 behind a jump from block 0, mostly in CTAs
of several warps: the fault detector's barrier bookkeeping at 7-bit block numbers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from qgpu.isa import limits
from qgpu.isa.ops import OPS
from qgpu.isa.program import Bar, Block, Br, Exit, Imm, Instr, Jmp, Program, Reg

COUNTERS = (15, 14)  # loop counters by nesting depth: never written by random operations
WRITABLE = tuple(range(1, 14))
EDGES = (0, 1, 2, 3, 4, 5, 7, 8, 15, 16, 31, 32, 33, 63, 64, 255, 256, 0x7FFF, 0x8000,
         0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFE, 0xFFFFFFFF)
# (mask, offsets) for an address register of each space: rA & mask + off is aligned and
# inside the space (global 128 words, shared 32 words)
GLOBAL_ADDRESSING = ((0x1FC, (0,)), (0xFC, (0, 4, 64, 128, 256)), (0x1C, (0, 32, 480)),
                     (0xC, (0, 100, 200)), (0x4, (0, 4, 500)))
SHARED_ADDRESSING = ((0x7C, (0,)), (0x3C, (0, 4, 64)), (0xC, (0, 8, 112)), (0x4, (0, 120)))


def edge_word(rng: random.Random) -> int:
    pick = rng.random()
    if pick < 0.45:
        value = rng.choice(EDGES)
        return value if rng.random() < 0.8 else limits.u32(-value)
    if pick < 0.7:
        return rng.randrange(0, 300)
    return rng.getrandbits(32)


@dataclass
class Case:
    program: Program
    grid: int
    block: int
    memory: list[int]


class _Gen:
    def __init__(self, rng: random.Random, ops: tuple[str, ...], max_blocks: int):
        self.rng = rng
        self.max_blocks = max_blocks
        kinds: dict[str, list[str]] = {}
        for op in ops:
            kinds.setdefault(OPS[op].kind, []).append(op)
        self.alu = kinds.get("alu", [])
        self.sreg = kinds.get("sreg", [])
        self.loads = kinds.get("load", [])
        self.stores = kinds.get("store", [])
        self.atomics = kinds.get("atomic", [])
        self.lane_ops = kinds.get("shfl", []) + kinds.get("vote", [])
        self.blocks: list[dict] = []  # {"stages", "term": (kind, *targets), "wb"}
        self.bar_used = False
        self.written: list[int] = [1]  # registers written so far (operand candidates)
        self.depth = 0
        self.reserved = 1  # blocks that open structures still have to add (the last block)

    # -- operands --
    def _source(self, fresh: list[int]):
        rng = self.rng
        pick = rng.random()
        if pick < 0.35 and fresh:
            return Reg(rng.choice(fresh))  # an earlier stage of this block: forwarded
        if pick < 0.65:
            return Reg(rng.choice(self.written))
        if pick < 0.72:
            return Reg(rng.choice((0,) + COUNTERS[:self.depth]))
        return Imm(edge_word(rng))

    def _dst(self) -> int:
        return self.rng.choice(WRITABLE)

    # -- one block's stages --
    def _stages(self) -> list[Instr]:
        rng = self.rng
        n = rng.randint(1, limits.STAGES)
        out: list[Instr] = []
        fresh: list[int] = []
        wrote = False
        writes = 0
        while len(out) < n:
            room = n - len(out)
            pick = rng.random()
            mem = room >= 2 and pick < 0.3 and (self.loads or self.stores or self.atomics)
            if mem:
                shared = rng.random() < 0.3 and any(o.endswith("shared")
                                                    for o in self.loads + self.stores)
                space = "shared" if shared else "global"
                choices = []
                if not wrote:
                    choices += [o for o in self.loads if o.endswith(space)]
                    choices += [o for o in self.atomics if o.split(".")[1] == space]
                if writes < limits.MAX_BLOCK_WRITES:
                    choices += [o for o in self.stores if o.endswith(space)]
                if choices:  # reads (ld, atom) before writes (st, atom)
                    op = rng.choice(choices)
                    out += self._memory(op, space, fresh)
                    if OPS[op].kind in ("store", "atomic"):
                        wrote, writes = True, writes + 1
                    continue
            if pick < 0.12 and self.sreg:
                ins = Instr(rng.choice(self.sreg), self._dst())
            elif pick < 0.22 and self.lane_ops:
                op = rng.choice(self.lane_ops)
                srcs = tuple(self._source(fresh) for _ in range(OPS[op].n_srcs))
                if OPS[op].kind == "shfl" and rng.random() < 0.6:  # usual PTX forms
                    srcs = (srcs[0], Imm(rng.randrange(0, 5)),
                            Imm(rng.choice((0x1F, 0x3, 0x0, 0x1C03, 0x101F))))
                ins = Instr(op, self._dst(), srcs)
            else:
                op = rng.choice(self.alu)
                ins = Instr(op, self._dst(), tuple(self._source(fresh)
                                                   for _ in range(OPS[op].n_srcs)))
            out.append(ins)
            fresh.append(ins.dst)
        return out

    def _memory(self, op: str, space: str, fresh: list[int]) -> list[Instr]:
        """[and rA, rX, mask;] the memory operation at [rA+off] (or [r0+off])."""
        rng = self.rng
        words = limits.MODEL_GLOBAL_WORDS if space == "global" else limits.MODEL_SHARED_WORDS
        out = []
        if rng.random() < 0.25:
            base, off = Reg(0), 4 * rng.randrange(words)
        else:
            mask, offsets = rng.choice(GLOBAL_ADDRESSING if space == "global"
                                       else SHARED_ADDRESSING)
            addr = self._dst()
            src = rng.choice([Reg(r) for r in self.written + fresh] or [Reg(1)])
            out.append(Instr("and", addr, (src, Imm(mask))))
            fresh.append(addr)
            base, off = Reg(addr), rng.choice(offsets)
        spec = OPS[op]
        if spec.kind == "load":
            ins = Instr(op, self._dst(), (base,), off)
        elif spec.kind == "store":
            ins = Instr(op, None, (base, self._source(fresh)), off)
        else:
            ins = Instr(op, self._dst(), (base,) + tuple(self._source(fresh)
                                                         for _ in range(spec.n_srcs - 1)), off)
        out.append(ins)
        if ins.dst is not None:
            fresh.append(ins.dst)
        return out

    # -- structure --
    def _block(self, stages: list[Instr], term) -> int:
        self.blocks.append({"stages": stages, "term": term})
        for ins in stages:
            if ins.dst is not None and ins.dst not in self.written:
                self.written.append(ins.dst)
        return len(self.blocks) - 1

    def _room(self) -> int:
        return self.max_blocks - len(self.blocks) - self.reserved

    def region(self, items: int) -> None:
        """`items` structured items; control leaves the last one to the next block."""
        rng = self.rng
        for _ in range(items):
            room = self._room()
            pick = rng.random()
            if room >= 3 and pick < 0.25 and self.depth < len(COUNTERS):
                self._loop()
            elif room >= 2 and pick < 0.5:
                self._if()
            elif room >= 1 and pick < 0.58:
                self._early_exit()
            elif room >= 1 and pick < 0.63 and not self.bar_used:
                self.bar_used = True
                self._block(self._stages(), ("bar", "next"))
            elif room >= 1:
                self._block(self._stages(), ("jmp", "next"))

    def _cond(self) -> Reg:
        return Reg(self.rng.choice(self.written + [0]))

    def _if(self) -> None:
        rng = self.rng
        head = self._block(self._stages(), None)
        then_start = len(self.blocks)
        self.reserved += 1
        self.region(rng.randint(1, 2))
        self.reserved -= 1
        then_end = self._block(self._stages(), None)  # jumps to the join
        else_start = len(self.blocks)
        self.region(rng.randint(0, 1))
        join = len(self.blocks)
        self.blocks[head]["term"] = ("br", self._cond(), then_start, else_start)
        self.blocks[then_end]["term"] = ("jmp", join)

    def _loop(self) -> None:
        rng = self.rng
        counter = COUNTERS[self.depth]
        src = rng.choice(self.written + [0])
        init = [Instr("and", counter, (Reg(src), Imm(rng.choice((1, 3)))))]
        init.append(Instr("add", counter, (Reg(counter), Imm(1))))  # 1..4 trips
        if rng.random() < 0.3:
            init = [Instr("mov", counter, (Imm(rng.randint(1, 3)),))]
        self._block(init, ("jmp", "next"))
        header = len(self.blocks)
        self.depth += 1
        self.reserved += 1
        self.region(rng.randint(0, 2))
        self.reserved -= 1
        body = self._stages()[:limits.STAGES - 1]
        body.append(Instr("sub", counter, (Reg(counter), Imm(1))))
        self._block(body, ("br", Reg(counter), header, "next"))
        self.depth -= 1

    def _early_exit(self) -> None:
        self._block(self._stages(), ("br", self._cond(), "exit", "next"))

    def program(self) -> Program:
        self.region(self.rng.randint(1, 4) if self.max_blocks <= 12
                    else self.rng.randint(self.max_blocks // 6, self.max_blocks // 2))
        self.reserved -= 1
        self._block(self._stages(), ("exit",))
        exit_block = len(self.blocks)
        blocks = []
        full_writeback = self.rng.random() < 0.7
        for i, b in enumerate(self.blocks):
            term = b["term"]
            targets = [exit_block if t == "exit" else i + 1 if t == "next" else t
                       for t in term[1:]]
            if term[0] == "jmp":
                t = Jmp(targets[0])
            elif term[0] == "bar":
                t = Bar(targets[0])
            elif term[0] == "br":
                t = Br(targets[0], targets[1], targets[2])
            else:
                t = Exit()
            stages = [[ins] for ins in b["stages"]]
            defs = {ins.dst for ins in b["stages"] if ins.dst is not None}
            wb = frozenset(defs) if full_writeback or not defs else None
            blocks.append(Block(stages, t, wb))
        if any(isinstance(b.terminator, Br) and exit_block in (b.terminator.taken,
                                                               b.terminator.not_taken)
               for b in blocks):
            blocks.append(Block([], Exit(), frozenset()))
        return Program(blocks, name="fuzz")


def _retarget(term, shift: int):
    if isinstance(term, Jmp):
        return Jmp(term.target + shift)
    if isinstance(term, Bar):
        return Bar(term.target + shift)
    if isinstance(term, Br):
        return Br(term.cond, term.taken + shift, term.not_taken + shift)
    return term


def placed_high(program: Program, start: int) -> Program:
    """The program with its blocks moved to start.. (block 0 jumps there; the blocks
    between are never reached): its barriers, branches and PCs at high block numbers."""
    moved = [Block([list(st) for st in b.stages], _retarget(b.terminator, start),
                   b.writeback) for b in program.blocks]
    gap = [Block([], Exit(), frozenset()) for _ in range(start - 1)]
    return Program([Block([], Jmp(start), frozenset()), *gap, *moved], name=program.name)


HIGH_SHAPES = ((1, 8), (1, 16), (2, 8), (2, 4), (1, 12))  # mostly CTAs of 2-4 warps


def random_case(rng: random.Random, ops: tuple[str, ...], max_blocks: int = 12,
                multi_warp: float = 0.03, max_memory: int = limits.MODEL_GLOBAL_WORDS,
                high: float = 0.0) -> Case:
    """One random launch: program (at most max_blocks + 1 blocks), grid, block (one warp
    but for `multi_warp` of the cases), initial global memory (at most max_memory
    words). A `high` share of the cases has its program placed at blocks 48..127
    (placed_high) and, three times in four, CTAs of several warps: barriers past block
    64 that a warp waits at while the CTA's other warps run (issue 36's class; the
    draws come after the others, so high=0 gives the cases it always gave)."""
    program = _Gen(rng, ops, min(max_blocks, limits.MODEL_ROM_BLOCKS - 1)).program()
    if rng.random() < multi_warp:
        grid, block = rng.choice(((2, 4), (1, 8), (2, 3), (1, 16), (4, 1)))
    else:
        grid, block = 1, rng.choice((1, 2, 3, 4, 4, 4))
    n = min(max_memory, rng.choice((0, 4, 8, 16, 16, 32, 64, limits.MODEL_GLOBAL_WORDS)))
    memory = [edge_word(rng) if rng.random() < 0.7 else 0 for _ in range(n)]
    last_start = limits.MODEL_ROM_BLOCKS - len(program.blocks)
    if high and rng.random() < high and last_start >= 2:
        program = placed_high(program, rng.randint(min(48, last_start), last_start))
        if rng.random() < 0.75:
            grid, block = rng.choice(HIGH_SHAPES)
    return Case(program, grid, block, memory)
