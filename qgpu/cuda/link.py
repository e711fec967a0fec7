"""cuda.link: kernel templates and the per-launch link step.

A kernel compiles once to a template: a machine Program whose operands that depend on the
launch (kernel parameters, blockDim.x, gridDim.x, addresses of global variables) are
placeholders, with a relocation list saying where each one goes. Binding a launch's
values produces the Program the machine runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.errors import LaunchError
from qgpu.isa import Block, Imm, Instr, Program, limits


@dataclass(frozen=True)
class Reloc:
    """Operand `src` (an index, or 'offset' for the address offset) of the instruction in
    slot `slot` of stage `stage` of block `block` gets the value of symbol `sym` added."""
    block: int
    stage: int
    slot: int
    src: int | str
    sym: str


@dataclass
class KernelTemplate:
    name: str
    program: Program
    relocs: list[Reloc]
    n_params: int
    shared_bytes: int = 0
    pressure: int = 0
    stats: dict = field(default_factory=dict)

    def symbols(self) -> set[str]:
        return {r.sym for r in self.relocs}

    def bind(self, values: dict[str, int]) -> Program:
        """The runnable Program for one launch; values maps every symbol ('param:0',
        'ntid', 'nctaid', 'global:name') to a 32-bit integer."""
        missing = self.symbols() - set(values)
        if missing:
            raise LaunchError(f"kernel {self.name}: no value for {sorted(missing)}")
        by_instr: dict[tuple[int, int, int], list[Reloc]] = {}
        for r in self.relocs:
            by_instr.setdefault((r.block, r.stage, r.slot), []).append(r)
        blocks = []
        for bi, blk in enumerate(self.program.blocks):
            stages = []
            for si, st in enumerate(blk.stages):
                row = []
                for k, ins in enumerate(st):
                    for r in by_instr.get((bi, si, k), ()):
                        ins = _patch(ins, r, values[r.sym])
                    row.append(ins)
                stages.append(row)
            blocks.append(Block(stages, blk.terminator, blk.writeback))
        return Program(blocks, self.program.name, accesses=self.program.accesses)


def _patch(ins: Instr, r: Reloc, value: int) -> Instr:
    if r.src == "offset":
        return Instr(ins.op, ins.dst, ins.srcs, limits.u32(ins.offset + value))
    srcs = list(ins.srcs)
    srcs[r.src] = Imm(limits.u32(srcs[r.src].value + value))
    return Instr(ins.op, ins.dst, tuple(srcs), ins.offset)
