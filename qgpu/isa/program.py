"""isa.program: machine programs as data: operands, instructions, blocks, terminators,
the program, its validation against the machine's limits, and block-level liveness.

Block semantics (docs/isa.md): a block runs for the active lanes of one warp. Its memory
reads all come before its memory writes (checked here). Its stages run in order; the
operations of one stage read the registers as they were when the stage began (so they
are independent) and at most one of them writes each register. The terminator reads the
registers after the last stage. When the block ends, only the registers in its
`writeback` set keep their new values; the others were block-local temporaries and
return to their values from before the block. (The protocol returns exactly the
writeback registers as tokens, so this is what the model computes too.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.errors import ProgramError
from qgpu.isa import limits
from qgpu.isa.ops import OPS


@dataclass(frozen=True)
class Reg:
    n: int

    def __str__(self) -> str:
        return f"r{self.n}"


@dataclass(frozen=True)
class Imm:
    value: int  # stored as uint32

    def __post_init__(self):
        if not -(1 << 31) <= self.value <= limits.WORD_MASK:
            raise ProgramError(f"immediate {self.value} does not fit in 32 bits")
        object.__setattr__(self, "value", limits.u32(self.value))

    def __str__(self) -> str:
        v = limits.s32(self.value)
        return str(v) if -4096 <= v <= 4096 else f"0x{self.value:x}"


Operand = Reg | Imm


@dataclass(frozen=True)
class Instr:
    op: str
    dst: int | None = None
    srcs: tuple[Operand, ...] = ()
    offset: int = 0          # byte offset added to the address operand (memory ops)

    @property
    def spec(self):
        return OPS[self.op]

    def reads(self) -> set[int]:
        return {s.n for s in self.srcs if isinstance(s, Reg) and s.n != limits.ZERO_REG}


@dataclass(frozen=True)
class Jmp:
    target: int


@dataclass(frozen=True)
class Br:
    cond: Reg
    taken: int
    not_taken: int


BAR_SCOPES = ("cta", "group")
GROUP_THREADS = 32        # a "group" barrier's threads: CUDA's warp, 8 machine warps


@dataclass(frozen=True)
class Bar:
    """Wait at a barrier, then continue at `target`. scope "cta": every non-exited lane of
    the CTA (`bar`, __syncthreads); "group": every non-exited lane of the lane's group of
    32 consecutive threads of the CTA (`bar.group`; the CUDA front end's warp barrier)."""
    target: int
    scope: str = "cta"


@dataclass(frozen=True)
class Exit:
    pass


Terminator = Jmp | Br | Bar | Exit


def successors(term: Terminator) -> tuple[int, ...]:
    if isinstance(term, Jmp | Bar):
        return (term.target,)
    if isinstance(term, Br):
        return (term.taken, term.not_taken)
    return ()


@dataclass
class Block:
    stages: list[list[Instr]] = field(default_factory=list)
    terminator: Terminator = field(default_factory=Exit)
    writeback: frozenset[int] | None = None   # None: computed by liveness

    def defs(self) -> set[int]:
        return {i.dst for st in self.stages for i in st if i.dst is not None}

    def upward_uses(self) -> set[int]:
        """Registers read before this block defines them (the block's live-in part)."""
        defined: set[int] = set()
        uses: set[int] = set()
        for st in self.stages:
            for ins in st:
                uses |= ins.reads() - defined
            defined |= {i.dst for i in st if i.dst is not None}
        if isinstance(self.terminator, Br) and self.terminator.cond.n != limits.ZERO_REG:
            if self.terminator.cond.n not in defined:
                uses.add(self.terminator.cond.n)
        return uses


@dataclass(frozen=True)
class Allocation:
    """An array of a launch: `words` words of global memory from word `base`; `sites`
    are the operands (block, stage, slot, operand index or "offset") that hold its base
    address (interp.bounds checks accesses derived from them); `nbytes` its bytes (0:
    whole words) and `itemsize` its element's, for 8/16-bit accesses."""
    name: str
    base: int
    words: int
    sites: frozenset = frozenset()
    nbytes: int = 0
    itemsize: int = 4


@dataclass
class Program:
    blocks: list[Block]
    name: str = "kernel"
    # the launch's arrays (the CUDA API's link): not part of what the machine runs
    arrays: tuple = field(default=(), compare=False)
    # compiled from CUDA (the API's link): CUDA's memory model applies, and the
    # interpreter reports shared-memory races between warps (interp.races)
    cuda: bool = field(default=False, compare=False)
    # the launch's shared memory per CTA in words (static __shared__ data + the extern
    # array's launch size, from the API): the interpreter faults past it; None: the ISA's
    shared_words: int | None = field(default=None, compare=False)
    # global words no argument, variable or printf record owns (qgpu.cuda.guard checks
    # them unchanged after a launch: an out-of-bounds store on the model is not silent)
    free_words: tuple = field(default=(), compare=False)
    # the memory the launch's data is linked into (the API's link: the model machine's
    # sizes when the launch fits them, else the ISA's); None: not linked (hand-written)
    memory_sizes: limits.MemorySizes | None = field(default=None, compare=False)
    # (block, stage, slot) -> (bytes, part): a word operation the CUDA front end made of a
    # narrower or wider access (8/16-bit, long long), which the interpreter checks like a
    # GPU (its alignment, its bytes within the array); not part of what the machine runs
    accesses: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        validate(self)
        if any(b.writeback is None for b in self.blocks):
            live_out = liveness(self)
            for i, b in enumerate(self.blocks):
                if b.writeback is None:
                    b.writeback = frozenset(b.defs() & live_out[i])

    def instruction_count(self) -> int:
        return sum(len(st) for b in self.blocks for st in b.stages)


def liveness(prog: Program) -> list[set[int]]:
    """Registers live at each block's exit (classic backward dataflow over the CFG).
    SIMT does not change it: every lane follows the CFG with registers of its own."""
    n = len(prog.blocks)
    live_in: list[set[int]] = [set() for _ in range(n)]
    live_out: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for i in reversed(range(n)):
            b = prog.blocks[i]
            out: set[int] = set()
            for s in successors(b.terminator):
                out |= live_in[s]
            inn = b.upward_uses() | (out - b.defs())
            if out != live_out[i] or inn != live_in[i]:
                live_out[i], live_in[i] = out, inn
                changed = True
    return live_out


def local_words(prog: Program) -> int:
    """Words of local memory the program's ld.local / st.local may touch per thread: one
    past the highest constant address (r0 or an immediate base), or all LOCAL_WORDS when an
    address comes from a register."""
    top = 0
    for blk in prog.blocks:
        for st in blk.stages:
            for ins in st:
                if OPS[ins.op].space != "local":
                    continue
                base = ins.srcs[0]
                if isinstance(base, Reg) and base.n != limits.ZERO_REG:
                    return limits.LOCAL_WORDS
                value = base.value if isinstance(base, Imm) else 0
                top = max(top, min(limits.u32(value + ins.offset) // 4 + 1,
                                   limits.LOCAL_WORDS))
    return top


def local_refusal(words: int) -> str:
    """Why the model does not run a program with `words` words of local memory (the one
    text of machine.spec's refusal and the launch API's)."""
    return (f"uses {words} word{'s' * (words != 1)} of local memory per thread (register "
            f"spills); the model machine has none yet: run it on the interpreter "
            f"(engine='interp', --engine interp; docs/cuda.md, 'Register spills')")


def _check_operand(where: str, o, allow_imm: bool = True) -> None:
    if isinstance(o, Reg):
        if not 0 <= o.n < limits.REGS:
            raise ProgramError(f"{where}: register r{o.n} does not exist (r0..r{limits.REGS - 1})")
    elif isinstance(o, Imm):
        if not allow_imm:
            raise ProgramError(f"{where}: operand must be a register")
    else:
        raise ProgramError(f"{where}: bad operand {o!r}")


def _check_memory_order(bi: int, blk: Block) -> None:
    """Every memory read of a block precedes every memory write (in stage, slot order).
    Then a block reads memory as it was when the block began and its writes land after
    its reads: the circuit needs no store-to-load forwarding inside a block."""
    first_write = None
    for si, st in enumerate(blk.stages):
        for ins in st:
            kind = OPS[ins.op].kind if ins.op in OPS else None
            if kind in ("load", "atomic") and first_write is not None:
                raise ProgramError(
                    f"block {bi}: {ins.op} at stage {si} reads memory after "
                    f"{first_write[0]} at stage {first_write[1]} wrote it; a block's "
                    f"memory reads must all come before its writes (end the block after "
                    f"the write)")
            if kind in ("store", "atomic") and first_write is None:
                first_write = (ins.op, si)
    writes = sum(1 for st in blk.stages for ins in st
                 if ins.op in OPS and OPS[ins.op].kind in ("store", "atomic"))
    if writes > limits.MAX_BLOCK_WRITES:
        raise ProgramError(f"block {bi}: {writes} memory writes (stores and atomics); a block "
                           f"holds at most {limits.MAX_BLOCK_WRITES} (MAX_BLOCK_WRITES)")


def validate(prog: Program) -> None:
    """Raise ProgramError naming the block, stage and limit for any rule broken."""
    if not prog.blocks:
        raise ProgramError("program has no blocks")
    if len(prog.blocks) > limits.ROM_BLOCKS:
        raise ProgramError(f"program '{prog.name}' needs {len(prog.blocks)} blocks; "
                           f"the ROM holds {limits.ROM_BLOCKS}")
    nb = len(prog.blocks)
    for bi, blk in enumerate(prog.blocks):
        if len(blk.stages) > limits.STAGES:
            raise ProgramError(f"block {bi}: {len(blk.stages)} stages, at most {limits.STAGES}")
        for si, st in enumerate(blk.stages):
            where = f"block {bi} stage {si}"
            if not st:
                raise ProgramError(f"{where}: empty stage")
            if len(st) > limits.SLOTS:
                raise ProgramError(f"{where}: {len(st)} operations, at most {limits.SLOTS}")
            written: set[int] = set()
            for ins in st:
                spec = OPS.get(ins.op)
                if spec is None:
                    raise ProgramError(f"{where}: unknown operation '{ins.op}'")
                if len(ins.srcs) != spec.n_srcs:
                    raise ProgramError(f"{where}: {ins.op} takes {spec.n_srcs} operands, "
                                       f"got {len(ins.srcs)}")
                for o in ins.srcs:
                    _check_operand(f"{where} {ins.op}", o)
                if spec.has_dst:
                    if ins.dst is None or not 0 < ins.dst < limits.REGS:
                        raise ProgramError(f"{where}: {ins.op} needs a destination r1.."
                                           f"r{limits.REGS - 1}, got {ins.dst}")
                    if ins.dst in written:
                        raise ProgramError(f"{where}: r{ins.dst} written twice in one stage")
                    written.add(ins.dst)
                elif ins.dst is not None:
                    raise ProgramError(f"{where}: {ins.op} has no destination")
                if spec.kind not in ("load", "store", "atomic") and ins.offset:
                    raise ProgramError(f"{where}: {ins.op} takes no address offset")
        _check_memory_order(bi, blk)
        term = blk.terminator
        if isinstance(term, Br):
            _check_operand(f"block {bi} br", term.cond, allow_imm=False)
        if isinstance(term, Bar) and term.scope not in BAR_SCOPES:
            raise ProgramError(f"block {bi}: barrier scope '{term.scope}'; the machine has "
                               f"{', '.join(BAR_SCOPES)}")
        for t in successors(term):
            if not 0 <= t < nb:
                raise ProgramError(f"block {bi}: branch target {t} outside the program "
                                   f"(blocks 0..{nb - 1})")
        if blk.writeback is not None:
            extra = set(blk.writeback) - blk.defs()
            if extra:
                raise ProgramError(f"block {bi}: writeback names registers the block does "
                                   f"not write: {sorted(extra)}")
