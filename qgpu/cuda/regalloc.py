"""cuda.regalloc: virtual registers to the machine's 15 usable registers.

Liveness runs over the scheduled machine blocks at stage resolution: inside a block of S
stages, stage k reads at time 2k and writes at time 2k + 1, the block's entry is time -1
and its end (the terminator, the write-back) is time 2S. Each virtual register occupies,
per block, the closed interval from its definition (or the entry, when live in) to its
last read (or the end, when live out); two that overlap anywhere interfere. A graph
colouring (simplify/select, optimistic, biased towards the source of a move) assigns
registers. A virtual register that is live into a block keeps its register there, so no
moves are ever inserted; a kernel whose pressure exceeds the register file is a
RegisterError naming the kernel and its pressure, on which cuda.codegen compiles it again
with values spilled to local memory (cuda.spill).
"""

from __future__ import annotations

from qgpu.cuda.ir import CondBr, V, successors
from qgpu.cuda.schedule import MBlock
from qgpu.errors import CompileError
from qgpu.isa import limits

USABLE = [r for r in range(limits.REGS) if r != limits.ZERO_REG]


class RegisterError(CompileError):
    """The colouring needs more registers than the machine has (cuda.spill takes over)."""


def _block_uses_defs(mb: MBlock) -> tuple[set[V], set[V]]:
    uses: set[V] = set()
    defs: set[V] = set()
    for st in mb.stages:
        for op in st:
            uses |= {u for u in op.uses() if u not in defs}
        defs |= {op.dst for op in st if op.dst is not None}
    if isinstance(mb.term, CondBr) and isinstance(mb.term.cond, V) and mb.term.cond not in defs:
        uses.add(mb.term.cond)
    return uses, defs


def block_liveness(blocks: list[MBlock]) -> dict[str, tuple[set[V], set[V]]]:
    """(live_in, live_out) per machine block name."""
    by_name = {mb.name: mb for mb in blocks}
    ud = {mb.name: _block_uses_defs(mb) for mb in blocks}
    live_in = {n: set() for n in by_name}
    live_out = {n: set() for n in by_name}
    changed = True
    while changed:
        changed = False
        for mb in reversed(blocks):
            out = set().union(*(live_in[s] for s in successors(mb.term)))
            uses, defs = ud[mb.name]
            inn = uses | (out - defs)
            if out != live_out[mb.name] or inn != live_in[mb.name]:
                live_in[mb.name], live_out[mb.name] = inn, out
                changed = True
    return {n: (live_in[n], live_out[n]) for n in by_name}


def intervals(mb: MBlock, live_in: set[V], live_out: set[V]) -> dict[V, tuple[int, int]]:
    """Each virtual register's occupied interval inside the block (see the module doc)."""
    end = 2 * len(mb.stages)
    start: dict[V, int] = {v: -1 for v in live_in}
    last: dict[V, int] = {v: -1 for v in live_in}
    for k, st in enumerate(mb.stages):
        for op in st:
            for u in op.uses():
                last[u] = 2 * k
                start.setdefault(u, -1)   # read before any definition: live in
        for op in st:
            if op.dst is not None:
                # live in and rewritten here: one interval, one register, for both values
                start.setdefault(op.dst, 2 * k + 1)
                last[op.dst] = max(last.get(op.dst, -1), 2 * k + 1)
    if isinstance(mb.term, CondBr) and isinstance(mb.term.cond, V):
        last[mb.term.cond] = end
        start.setdefault(mb.term.cond, -1)
    for v in live_out:
        start.setdefault(v, -1)
        last[v] = end
    return {v: (start[v], last[v]) for v in start}


def interference(blocks: list[MBlock]) -> tuple[dict[V, set[V]], int]:
    """The interference graph and the largest number of values live at one time."""
    live = block_liveness(blocks)
    graph: dict[V, set[V]] = {}
    pressure = 0
    for mb in blocks:
        iv = intervals(mb, *live[mb.name])
        for v in iv:
            graph.setdefault(v, set())
        points = sorted({t for a, b in iv.values() for t in (a, b)})
        for t in points:
            alive = [v for v, (a, b) in iv.items() if a <= t <= b]
            pressure = max(pressure, len(alive))
            for i, x in enumerate(alive):
                for y in alive[i + 1:]:
                    graph[x].add(y)
                    graph[y].add(x)
    return graph, pressure


def color(graph: dict[V, set[V]], moves: list[tuple[V, V]], kernel: str,
          pressure: int) -> dict[V, int]:
    """Registers for every virtual register, or CompileError when 15 do not suffice."""
    k = len(USABLE)
    degree = {v: len(n) for v, n in graph.items()}
    removed: set[V] = set()
    stack: list[V] = []
    while len(stack) < len(graph):
        low = [v for v in graph if v not in removed and degree[v] < k]
        pick = min(low, key=lambda v: (degree[v], v.id)) if low else max(
            (v for v in graph if v not in removed), key=lambda v: (degree[v], v.id))
        stack.append(pick)
        removed.add(pick)
        for n in graph[pick]:
            degree[n] -= 1
    related: dict[V, set[V]] = {}
    for a, b in moves:
        related.setdefault(a, set()).add(b)
        related.setdefault(b, set()).add(a)
    reg: dict[V, int] = {}
    for v in reversed(stack):
        taken = {reg[n] for n in graph[v] if n in reg}
        free = [r for r in USABLE if r not in taken]
        if not free:
            raise RegisterError(
                f"kernel {kernel}: needs more than {k} registers ({pressure} values live at "
                f"once at its peak); the machine has {k} usable registers per lane. Split the "
                "kernel or keep fewer values alive at once")
        preferred = [reg[m] for m in related.get(v, ()) if m in reg and reg[m] in free]
        reg[v] = preferred[0] if preferred else free[0]
    return reg


def allocate(blocks: list[MBlock], kernel: str) -> tuple[dict[V, int], int,
                                                         dict[str, tuple[set[V], set[V]]]]:
    """(register of each virtual register, peak pressure, machine-block liveness)."""
    graph, pressure = interference(blocks)
    moves = [(op.dst, op.srcs[0]) for mb in blocks for st in mb.stages for op in st
             if op.op == "mov" and isinstance(op.srcs[0], V)]
    return color(graph, moves, kernel, pressure), pressure, block_liveness(blocks)
