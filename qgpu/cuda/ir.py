"""cuda.ir: the front end's middle representation, between PTX and machine blocks.

A Function is a control-flow graph of basic blocks; each holds native machine operations
(qgpu.isa mnemonics) on unlimited virtual registers, and ends in one terminator. Operands
are virtual registers (V), immediates (qgpu.isa Imm) or link-time constants (Sym: a kernel
parameter, the launch's blockDim/gridDim, a global variable's address), which the link
step turns into immediates once a launch's values are known.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.isa import OPS, Imm


@dataclass(frozen=True)
class V:
    """A virtual register."""
    id: int

    def __str__(self) -> str:
        return f"v{self.id}"


@dataclass(frozen=True)
class Sym:
    """A value fixed at link time: 'param:<i>', 'ntid', 'nctaid' or 'global:<name>'."""
    name: str

    def __str__(self) -> str:
        return f"${self.name}"


Operand = V | Imm | Sym


@dataclass
class Op:
    """One native operation. `origin` is the PTX instruction it came from (for errors)."""
    op: str
    dst: V | None
    srcs: tuple
    offset: int = 0
    origin: object = None
    offset_sym: Sym | None = None   # a link-time constant added to the offset (array base)
    # a word operation of a narrower or wider access: (the access's bytes, this word's
    # byte offset in it); the interpreter checks the access's alignment and bounds by it
    access: tuple[int, int] | None = None

    @property
    def kind(self) -> str:
        return OPS[self.op].kind

    def uses(self) -> list[V]:
        return [s for s in self.srcs if isinstance(s, V)]

    def touches_memory(self) -> bool:
        return self.kind in ("load", "store", "atomic")

    def __str__(self) -> str:
        d = f"{self.dst} = " if self.dst is not None else ""
        off = f" +{self.offset}" if self.offset else ""
        if self.offset_sym is not None:
            off += f" +{self.offset_sym}"
        return f"{d}{self.op} {', '.join(map(str, self.srcs))}{off}"


@dataclass
class Goto:
    target: str


@dataclass
class CondBr:
    cond: Operand
    taken: str
    not_taken: str


@dataclass
class Barrier:
    """bar.sync, then continue at target; scope "group": the 32-thread group's barrier
    (CUDA's warp: cuda.warp's lowered warp operations), "cta": __syncthreads."""
    target: str
    scope: str = "cta"


@dataclass
class Ret:
    pass


Terminator = Goto | CondBr | Barrier | Ret


def successors(term: Terminator) -> list[str]:
    if isinstance(term, Goto | Barrier):
        return [term.target]
    if isinstance(term, CondBr):
        return [term.taken] if term.taken == term.not_taken else [term.taken, term.not_taken]
    return []


def term_uses(term: Terminator) -> list[V]:
    return [term.cond] if isinstance(term, CondBr) and isinstance(term.cond, V) else []


@dataclass
class BasicBlock:
    name: str
    ops: list[Op] = field(default_factory=list)
    term: Terminator = field(default_factory=Ret)
    # a loop kept as its own basic block (div/rem): never merged into a chain or if-converted
    keep_whole: bool = False
    # operations scheduled in the order written (cuda.softfloat's sequences, ordered to
    # keep few values alive), not by the list scheduler's critical-path priority
    ordered: bool = False


@dataclass
class Function:
    name: str
    blocks: dict[str, BasicBlock]
    entry: str
    n_params: int = 0
    shared_bytes: int = 0
    dynamic_shared: bool = False    # extern __shared__ arrays, from shared_bytes on
    warp_scratch: int = 0           # cuda.warp's scratch (link.KernelTemplate.warp_scratch)
    next_vreg: int = 0
    device_sites: list = field(default_factory=list)   # printf/assert calls (cuda.printf)
    device_strings: set = field(default_factory=set)   # variables they read at compile time

    def new_vreg(self) -> V:
        self.next_vreg += 1
        return V(self.next_vreg)

    def predecessors(self) -> dict[str, list[str]]:
        preds: dict[str, list[str]] = {n: [] for n in self.blocks}
        for n, b in self.blocks.items():
            for s in successors(b.term):
                preds[s].append(n)
        return preds

    def dump(self) -> str:
        out = [f"function {self.name}"]
        for b in self.blocks.values():
            out.append(f"{b.name}:")
            out += [f"  {op}" for op in b.ops]
            out.append(f"  {b.term}")
        return "\n".join(out)
