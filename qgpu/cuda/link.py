"""cuda.link: kernel templates and the per-launch link step.

A kernel compiles once to a template: a machine Program whose operands that depend on the
launch (kernel parameters, blockDim.x, gridDim.x, addresses of global variables) are
placeholders, with a relocation list saying where each one goes. Binding a launch's
values produces the Program the machine runs.

Warp scratch: a kernel whose CUDA warp operations (32 lanes) are lowered through shared
memory (cuda.warp) gets the region `warp_scratch` after its static and dynamic shared
memory: one word per thread of the CTA, then (ballot and the other votes) one word per
32-thread group. Its group barriers (`bar.group`) are the CTA
barrier where the CTA has at most 32 threads (one group): bind writes them as plain
`bar`, which the compiled model runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.errors import LaunchError
from qgpu.isa import Bar, Block, Imm, Instr, Program, limits
from qgpu.isa.program import GROUP_THREADS


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
    # cuda.warp's scratch: 0 none, 1 a word per thread, 2 and a vote word per group
    warp_scratch: int = 0

    def scratch_words(self, threads: int) -> int:
        """Words of warp scratch a CTA of `threads` threads needs."""
        if not self.warp_scratch:
            return 0
        groups = -(-threads // GROUP_THREADS)
        return threads + (groups if self.warp_scratch > 1 else 0)

    def scratch_symbols(self, threads: int, shared_bytes: int) -> dict[str, int]:
        """The link symbols of the warp scratch of a CTA of `threads` threads whose
        static + dynamic shared memory takes `shared_bytes` bytes (byte addresses)."""
        base = -(-shared_bytes // 4) * 4
        return {"warp_scratch": base, "warp_votes": base + 4 * threads,
                "warp_threads": threads}

    def symbols(self) -> set[str]:
        return {r.sym for r in self.relocs}

    def bind(self, values: dict[str, int], threads: int | None = None) -> Program:
        """The runnable Program for one launch; values maps every symbol ('param:0',
        'ntid', 'nctaid', 'global:name', the warp scratch's) to a 32-bit integer.
        `threads`: the CTA's (a 2-D block's x * y); at most 32 makes bar.group bar."""
        threads = values.get("ntid", 0) if threads is None else threads
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
            term = blk.terminator
            if isinstance(term, Bar) and term.scope == "group" and threads <= GROUP_THREADS:
                term = Bar(term.target)
            blocks.append(Block(stages, term, blk.writeback))
        return Program(blocks, self.program.name, accesses=self.program.accesses)


def _patch(ins: Instr, r: Reloc, value: int) -> Instr:
    if r.src == "offset":
        return Instr(ins.op, ins.dst, ins.srcs, limits.u32(ins.offset + value))
    srcs = list(ins.srcs)
    srcs[r.src] = Imm(limits.u32(srcs[r.src].value + value))
    return Instr(ins.op, ins.dst, tuple(srcs), ins.offset)
