"""cuda.spill: register spills to per-thread local memory, as nvcc spills.

When the allocator (cuda.regalloc) cannot colour a kernel's machine blocks with the 15
usable registers, the back end (cuda.codegen) asks this module to compile it again with
some of its IR virtual registers kept in local memory (`ld.local` / `st.local`, the
thread's own LOCAL_WORDS words; docs/isa.md):

  * spill everywhere: each spilled register v gets a word; every definition of v writes
    a fresh temporary that is stored to the word right after it (`st.local [slot*4], t`),
    and every operation (or branch) that reads v reads a fresh temporary loaded from the
    word right before it (`ld.local t, [slot*4]`). This is exact on any control flow:
    the word is the variable, and each lane has words of its own, so SIMT divergence,
    barriers and the float routines' shared subroutines see what the register held.
  * the spill code is ordinary IR, so the scheduler packs it into blocks under the
    machine's rules (4 dependent stages of one operation, memory reads before writes,
    at most 3 memory writes per block); local operations are ordered only against local
    operations on the same word (cuda.schedule), never against global or shared ones.
  * which registers: after each failed colouring, the stage-level liveness of the
    scheduled blocks gives the points where more values are alive than registers; each
    alive value is traced back to its IR register and spilled greedily by the points it
    covers per cost, the cost being its definitions and uses weighted by 10 ** loop depth
    (natural loops of the CFG), so values used inside loops stay in registers. Spill
    temporaries and the scheduler's recomputed special registers are never spilled.
    Then the whole back end runs again on a fresh IR, until the colouring succeeds.

A kernel that colours without spills never comes here: its program is byte-identical to
one compiled before spilling existed. One that still does not colour after MAX_ROUNDS,
or that would need more than LOCAL_WORDS words, is the allocator's clear CompileError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from qgpu.cuda.ir import CondBr, Function, Op, V, successors
from qgpu.cuda.regalloc import USABLE, RegisterError, block_liveness, intervals
from qgpu.cuda.schedule import MBlock
from qgpu.errors import CompileError
from qgpu.isa import Imm, limits

MAX_ROUNDS = 24
LOOP_WEIGHT = 10


@dataclass
class Spilled:
    """The result of compiling with spills: the IR as scheduled, its machine blocks, and
    the registers kept in local memory (word k holds spilled[k])."""
    fn: Function
    mblocks: list[MBlock]
    spilled: list[V]


def loop_depths(fn: Function) -> dict[str, int]:
    """Per basic block, the number of natural loops (of the CFG's back edges) holding it."""
    names = list(fn.blocks)
    preds = fn.predecessors()
    dom = {n: set(names) for n in names}
    dom[fn.entry] = {fn.entry}
    changed = True
    while changed:
        changed = False
        for n in names:
            if n == fn.entry:
                continue
            ps = [dom[p] for p in preds[n]]
            new = {n} | (set.intersection(*ps) if ps else set())
            if new != dom[n]:
                dom[n], changed = new, True
    depth = dict.fromkeys(names, 0)
    for n in names:
        for h in successors(fn.blocks[n].term):
            if h in dom[n]:                     # back edge n -> h: h's natural loop
                body, todo = {h}, [n]
                while todo:
                    x = todo.pop()
                    if x not in body:
                        body.add(x)
                        todo += preds[x]
                for x in body:
                    depth[x] += 1
    return depth


def costs(fn: Function) -> dict[V, int]:
    """Each IR register's spill cost: its definitions and uses, 10 ** loop depth each."""
    depth = loop_depths(fn)
    cost: dict[V, int] = {}
    for name, b in fn.blocks.items():
        w = LOOP_WEIGHT ** depth[name]
        for op in b.ops:
            for v in [*op.uses(), *([op.dst] if op.dst is not None else [])]:
                cost[v] = cost.get(v, 0) + w
        if isinstance(b.term, CondBr) and isinstance(b.term.cond, V):
            cost[b.term.cond] = cost.get(b.term.cond, 0) + w
    return cost


def _address(slot: int) -> tuple[tuple, int]:
    return (Imm(0),), 4 * slot


def insert_spills(fn: Function, spilled: list[V]) -> set[V]:
    """Rewrite fn so that each register of `spilled` lives in local word spilled.index(v);
    the temporaries made (never to be spilled themselves) are returned."""
    slot = {v: k for k, v in enumerate(spilled)}
    temps: set[V] = set()

    def reload(v: V, origin) -> tuple[Op, V]:
        t = fn.new_vreg()
        temps.add(t)
        base, offset = _address(slot[v])
        return Op("ld.local", t, base, offset, origin), t

    for b in fn.blocks.values():
        out: list[Op] = []
        for op in b.ops:
            loaded: dict[V, V] = {}
            for v in op.uses():
                if v in slot and v not in loaded:
                    ld, loaded[v] = reload(v, op.origin)
                    out.append(ld)
            op.srcs = tuple(loaded.get(x, x) if isinstance(x, V) else x for x in op.srcs)
            out.append(op)
            if op.dst in slot:
                v, t = op.dst, fn.new_vreg()
                temps.add(t)
                op.dst = t
                base, offset = _address(slot[v])
                out.append(Op("st.local", None, (*base, t), offset, op.origin))
        if isinstance(b.term, CondBr) and b.term.cond in slot:
            ld, b.term.cond = reload(b.term.cond, None)
            out.append(ld)
        b.ops = out
    return temps


def crowded_points(mblocks: list[MBlock], margin: int = 0) -> list[list[V]]:
    """The values alive at each stage-level point where more are alive than the usable
    registers less `margin` (cuda.regalloc's intervals)."""
    live = block_liveness(mblocks)
    out = []
    for mb in mblocks:
        iv = intervals(mb, *live[mb.name])
        for t in sorted({x for ab in iv.values() for x in ab}):
            alive = [v for v, (a, b) in iv.items() if a <= t <= b]
            if len(alive) > len(USABLE) - margin:
                out.append(alive)
    return out


def _origin(renamed: dict[V, V], spillable: set[V], v: V) -> V | None:
    """The IR register a scheduled value comes from, when it may be spilled."""
    r = renamed.get(v, v)
    return r if r in spillable else None


def choose(points: list[list[V]], origin: Callable[[V], V | None], cost: dict[V, int],
           limit: int) -> list[V]:
    """IR registers to spill so that each point loses its excess over `limit` values:
    greedily, the register alive at the most points still over per cost."""
    need: list[tuple[set[V], int]] = []
    for alive in points:
        regs = {origin(v) for v in alive} - {None}
        need.append((regs, len(alive) - limit))
    chosen: list[V] = []
    while True:
        open_ = [regs for regs, n in need if n > 0]
        if not open_:
            return chosen
        score: dict[V, int] = {}
        for regs in open_:
            for v in regs:
                if v not in chosen:
                    score[v] = score.get(v, 0) + 1
        if not score:
            return chosen
        pick = max(score, key=lambda v: (score[v] / max(cost.get(v, 1), 1), -v.id))
        chosen.append(pick)
        need = [(regs, n - (pick in regs)) for regs, n in need]


def compile_spilled(build: Callable[[], Function],
                    schedule_fn: Callable[[Function], list[MBlock]],
                    colour: Callable[[list[MBlock]], object], kernel: str,
                    first: CompileError) -> tuple[Spilled, object]:
    """Compile a fresh IR from `build()` with more and more registers spilled until
    `colour` (cuda.regalloc.allocate) succeeds; its result with the Spilled record."""
    spilled: list[V] = []
    error = first
    margin = 0
    for _ in range(MAX_ROUNDS):
        fn = build()
        cost = costs(fn)
        temps = insert_spills(fn, spilled)
        ir_regs = {v for b in fn.blocks.values() for op in b.ops
                   for v in [*op.uses(), op.dst] if v is not None} - temps
        defined = {id(op): op.dst for b in fn.blocks.values() for op in b.ops
                   if op.dst is not None}
        mblocks = schedule_fn(fn)
        renamed = {op.dst: defined[id(op)] for mb in mblocks for st in mb.stages
                   for op in st if op.dst is not None and id(op) in defined}
        try:
            return Spilled(fn, mblocks, list(spilled)), colour(mblocks)
        except RegisterError as exc:
            error = exc

        origin = partial(_origin, renamed, ir_regs - set(spilled))
        points = crowded_points(mblocks)
        more = choose(points, origin, cost, len(USABLE)) if points else []
        if not more:            # no point over the registers, yet no colouring: tighten
            margin += 1
            more = choose(crowded_points(mblocks, margin), origin, cost,
                          len(USABLE) - margin)[:1]
        if not more:
            break
        if len(spilled) + len(more) > limits.LOCAL_WORDS:
            raise CompileError(f"{error} (spilling it would take more than the "
                               f"{limits.LOCAL_WORDS} words of local memory per thread)"
                               ) from error
        spilled += more
    raise CompileError(f"{error} (even with {len(spilled)} values spilled to local "
                       f"memory)") from error
