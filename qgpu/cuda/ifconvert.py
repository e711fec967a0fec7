"""cuda.ifconvert: branches over small side-effect-free blocks become straight-line code.

Each executed block costs an EXEC token, a `br` a TAKEN token, and the ROM holds only 32
blocks; clang keeps `if (in bounds) acc += a[i]` as a branch. Two rewrites, repeated:

  * triangle / diamond: X branches on c to T (and F), which rejoin at J. T's operations
    move into X under fresh names, and each register T defines that J needs becomes
    `selp(new, old, c)`. A load moves too: its base becomes `selp(base, -offset, c)`, so
    when c is false it reads the array's first word (or word 0) instead of faulting.
  * chained conditions (`if (a && b)` compiled as two branches): X branches to Y or A,
    Y to B or A; Y's operations (which A does not need) move into X and X branches once
    on the combined condition.

Only operations without effects beyond their register move (ALU, special registers,
loads), and only small blocks: stores, atomics, shuffles and votes (whose result depends
on which lanes are active) stay behind their branch.
"""

from __future__ import annotations

from qgpu.cuda.ir import BasicBlock, CondBr, Function, Goto, Op, V
from qgpu.cuda.optimize import liveness
from qgpu.isa import Imm, limits

MAX_OPS = 12          # a chain's condition block
# a triangle's or diamond's arm; measured on the suite, larger arms and speculated loads
# (which need safe-address selects) raise register pressure without saving tokens
MAX_ARM_OPS = 4
ARM_LOADS = False
_SPECULATABLE = ("alu", "sreg", "load")


def _speculatable(b: BasicBlock, limit: int = MAX_OPS, loads: bool = True) -> bool:
    kinds = _SPECULATABLE if loads else ("alu", "sreg")
    return (not b.keep_whole and len(b.ops) <= limit
            and all(op.kind in kinds for op in b.ops))


def _hoist(fn: Function, x: BasicBlock, t: BasicBlock, cond: V, when_true: bool
           ) -> dict[V, V]:
    """Append t's ops to x under fresh names, loads made safe; returns old -> new names."""
    names: dict[V, V] = {}
    for op in t.ops:
        srcs = tuple(names.get(s, s) if isinstance(s, V) else s for s in op.srcs)
        if op.kind == "load":
            safe = Imm(limits.u32(-op.offset))
            base = fn.new_vreg()
            a, b = (srcs[0], safe) if when_true else (safe, srcs[0])
            x.ops.append(Op("selp", base, (a, b, cond), origin=op.origin))
            srcs = (base,) + srcs[1:]
        new = fn.new_vreg()
        names[op.dst] = new
        x.ops.append(Op(op.op, new, srcs, op.offset, op.origin, op.offset_sym))
    return names


def _triangle_or_diamond(fn: Function, name: str, live, preds) -> bool:
    x = fn.blocks[name]
    c, tn, fnm = x.term.cond, x.term.taken, x.term.not_taken
    t, f = fn.blocks[tn], fn.blocks[fnm]

    def single(b):
        return (b.name != fn.entry and preds[b.name] == [name] and isinstance(b.term, Goto)
                and _speculatable(b, MAX_ARM_OPS, ARM_LOADS))

    def arm(b, other):
        return single(b) and b.term.target == other

    if arm(t, fnm):
        join, sides = fnm, [(t, True)]
    elif arm(f, tn):
        join, sides = tn, [(f, False)]
    elif single(t) and single(f) and t.term.target == f.term.target and tn != fnm:
        join, sides = t.term.target, [(t, True), (f, False)]
    else:
        return False
    renamed = [(_hoist(fn, x, b, c, side), side) for b, side in sides]
    needed = live[join][0]
    defined = {v for names, _ in renamed for v in names}
    for v in sorted(defined & needed, key=lambda v: v.id):
        on_true = next((n[v] for n, s in renamed if s and v in n), v)
        on_false = next((n[v] for n, s in renamed if not s and v in n), v)
        x.ops.append(Op("selp", v, (on_true, on_false, c)))
    for b, _ in sides:
        del fn.blocks[b.name]
    x.term = Goto(join)
    return True


def _negate(fn: Function, x: BasicBlock, c: V) -> V:
    n = fn.new_vreg()
    x.ops.append(Op("xor", n, (c, Imm(1))))
    return n


def _chain(fn: Function, name: str, live, preds) -> bool:
    x = fn.blocks[name]
    c = x.term.cond
    for y_name, other, via_true in ((x.term.taken, x.term.not_taken, True),
                                    (x.term.not_taken, x.term.taken, False)):
        y = fn.blocks[y_name]
        if (y_name == fn.entry or y_name == name or preds[y_name] != [name]
                or not _speculatable(y) or not isinstance(y.term, CondBr)
                or other not in (y.term.taken, y.term.not_taken)
                or y.term.taken == y.term.not_taken):
            continue
        defs = {op.dst for op in y.ops if op.dst is not None}
        if defs & live[other][0] or c in defs or any(op.kind == "load" for op in y.ops):
            continue
        target = y.term.not_taken if y.term.taken == other else y.term.taken
        x.ops += y.ops
        g = c if via_true else _negate(fn, x, c)
        h = y.term.cond if y.term.taken == target else _negate(fn, x, y.term.cond)
        both = fn.new_vreg()
        x.ops.append(Op("and", both, (g, h)))
        x.term = CondBr(both, target, other)
        del fn.blocks[y_name]
        return True
    return False


def if_convert(fn: Function) -> bool:
    """Apply both rewrites until none applies; True if anything changed."""
    changed_any = False
    changed = True
    while changed:
        changed = False
        live = liveness(fn)
        preds = fn.predecessors()
        for name in list(fn.blocks):
            b = fn.blocks.get(name)
            if b is None or not isinstance(b.term, CondBr) or b.keep_whole:
                continue
            if not isinstance(b.term.cond, V):
                continue
            if _triangle_or_diamond(fn, name, live, preds) or _chain(fn, name, live, preds):
                changed = changed_any = True
                break
    return changed_any
