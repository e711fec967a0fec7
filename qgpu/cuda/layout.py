"""cuda.layout: the order of basic blocks in the ROM, chosen so that the machine's SIMT rule
(a warp runs the block with the smallest index among its lanes' PCs) reconverges where a
real GPU does.

The order is a loop-aware topological order: every block comes after all blocks that
branch forward to it (so a join point, the immediate post-dominator of a branch, comes
after both sides: lanes that get there first wait for the rest), and each loop's blocks
are contiguous, header first, before any block the loop exits to (lanes that leave a
loop wait until every lane has left it). Irreducible control flow is rejected.
"""

from __future__ import annotations

from qgpu.cuda.ir import Function, successors
from qgpu.errors import CompileError


def dominators(fn: Function) -> dict[str, set[str]]:
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
            new = ({n} | set.intersection(*ps)) if ps else {n}
            if new != dom[n]:
                dom[n], changed = new, True
    return dom


def natural_loops(fn: Function) -> dict[str, set[str]]:
    """header -> blocks of its loop (all back edges to one header merged)."""
    dom = dominators(fn)
    preds = fn.predecessors()
    loops: dict[str, set[str]] = {}
    for n, b in fn.blocks.items():
        for s in successors(b.term):
            if s in dom[n]:                   # back edge n -> s
                body = loops.setdefault(s, {s})
                todo = [n]
                while todo:
                    x = todo.pop()
                    if x not in body:
                        body.add(x)
                        todo += preds[x]
    _check_reducible(fn, dom)
    return loops


def _check_reducible(fn: Function, dom: dict[str, set[str]]) -> None:
    """Every edge that closes a cycle in a depth-first walk must go to a dominator."""
    state: dict[str, int] = {}
    stack = [(fn.entry, iter(successors(fn.blocks[fn.entry].term)))]
    state[fn.entry] = 1
    while stack:
        n, it = stack[-1]
        nxt = next(it, None)
        if nxt is None:
            state[n] = 2
            stack.pop()
            continue
        if state.get(nxt) == 1 and nxt not in dom[n]:
            raise CompileError(f"kernel {fn.name}: irreducible control flow (a loop with "
                               "several entries); qgpu cannot lay it out for reconvergence")
        if nxt not in state:
            state[nxt] = 1
            stack.append((nxt, iter(successors(fn.blocks[nxt].term))))


def block_order(fn: Function) -> list[str]:
    """The ROM order of fn's basic blocks (entry first)."""
    loops = natural_loops(fn)
    position = {n: i for i, n in enumerate(fn.blocks)}
    return _order_region(fn, set(fn.blocks), fn.entry, loops, position)


def _order_region(fn, region: set[str], head: str, loops, position) -> list[str]:
    # the loops directly inside this region become single units
    inner = [h for h in loops if h in region and h != head]
    inner.sort(key=lambda h: -len(loops[h]))
    unit_of: dict[str, str] = {}
    for h in inner:                           # outermost first claims its blocks
        if h in unit_of:
            continue
        for x in loops[h]:
            unit_of.setdefault(x, h)
    for x in region:
        unit_of.setdefault(x, x)
    units = {unit_of[x] for x in region}
    edges: dict[str, set[str]] = {u: set() for u in units}
    indeg = {u: 0 for u in units}
    for x in region:
        for s in successors(fn.blocks[x].term):
            if s not in region or s == head:
                continue                      # exits and this region's back edges
            a, b = unit_of[x], unit_of[s]
            if a != b and b not in edges[a]:
                edges[a].add(b)
                indeg[b] += 1
    order: list[str] = []
    ready = [u for u in units if indeg[u] == 0]
    if unit_of[head] not in ready:
        raise CompileError(f"kernel {fn.name}: control flow enters a region away from its "
                           "header")
    while ready:
        ready.sort(key=lambda u: (u != unit_of[head], position[u]))
        u = ready.pop(0)
        if u in loops and u != head and u in inner:
            order += _order_region(fn, loops[u], u, loops, position)
        else:
            order.append(u)
        for v in sorted(edges[u], key=position.get):
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    if len(set(order)) != len(region):
        raise CompileError(f"kernel {fn.name}: control flow qgpu cannot order (a cycle "
                           "that is not a loop)")
    return order
