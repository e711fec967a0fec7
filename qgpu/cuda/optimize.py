"""cuda.optimize: clean-up passes on the IR before scheduling, all aimed at fewer machine
blocks, fewer live registers and so fewer trace tokens:

  * constant and copy propagation (a register defined once by a constant, a parameter or
    another once-defined register is replaced by it: immediates cost no register);
  * local algebra (x + 0, x * 1, selp 1, 0, p on predicates, constant folding);
  * dead-code elimination;
  * copy coalescing (the moves PTX puts on loop back edges vanish when both sides can
    share a register);
  * CFG simplification (jump threading over empty blocks, merging straight-line chains,
    removing unreachable blocks).
"""

from __future__ import annotations

from qgpu.cuda.ir import CondBr, Function, Goto, Op, Sym, V, successors, term_uses
from qgpu.cuda.layout import natural_loops
from qgpu.isa import OPS, Imm

_PURE_KINDS = ("alu", "sreg", "load", "shfl", "vote")


def _defs(fn: Function) -> dict[V, list[Op]]:
    defs: dict[V, list[Op]] = {}
    for b in fn.blocks.values():
        for op in b.ops:
            if op.dst is not None:
                defs.setdefault(op.dst, []).append(op)
    return defs


def _replace_uses(fn: Function, mapping: dict[V, object]) -> None:
    if not mapping:
        return

    def res(x):
        seen = 0
        while isinstance(x, V) and x in mapping and seen < 64:
            x, seen = mapping[x], seen + 1
        return x

    for b in fn.blocks.values():
        for op in b.ops:
            op.srcs = tuple(res(s) for s in op.srcs)
        if isinstance(b.term, CondBr):
            c = res(b.term.cond)
            if isinstance(c, V | Imm):      # a branch condition must stay a register
                b.term.cond = c


def propagate(fn: Function, predicates: set[V]) -> bool:
    """Constant/copy propagation and local algebra; True when anything changed."""
    changed = False
    defs = _defs(fn)
    mapping: dict[V, object] = {}
    for v, ops in defs.items():
        if len(ops) != 1:
            continue
        op = ops[0]
        if op.op == "mov" and not (isinstance(op.srcs[0], V) and len(defs.get(op.srcs[0], [])) > 1):
            if op.srcs[0] != v:
                mapping[v] = op.srcs[0]
    if mapping:
        _replace_uses(fn, mapping)
        changed = True
    for b in fn.blocks.values():
        for op in b.ops:
            changed |= _simplify(op, predicates)
        if isinstance(b.term, CondBr) and isinstance(b.term.cond, Imm):
            b.term = Goto(b.term.taken if b.term.cond.value else b.term.not_taken)
            changed = True
    return changed


def _simplify(op: Op, predicates: set[V]) -> bool:
    """Rewrite op in place into a cheaper equal form; True if it changed."""
    s = op.srcs
    spec = OPS[op.op]
    if spec.kind == "alu" and op.op != "mov" and all(isinstance(x, Imm) for x in s):
        op.op, op.srcs = "mov", (Imm(spec.fn(*(x.value for x in s))),)
        return True
    zero, one, ones = Imm(0), Imm(1), Imm(0xFFFFFFFF)
    a = s[0] if s else None
    b = s[1] if len(s) > 1 else None
    new = None
    if op.op in ("add", "sub", "or", "xor", "shl", "shr.u", "shr.s") and b == zero:
        new = a
    elif op.op in ("add", "or", "xor") and a == zero:
        new = b
    elif op.op == "mul" and b == one or op.op == "and" and b == ones:
        new = a
    elif op.op == "mul" and a == one or op.op == "and" and a == ones:
        new = b
    elif op.op in ("mul", "and") and zero in (a, b):
        new = zero
    if new is not None:
        op.op, op.srcs = "mov", (new,)
        return True
    if op.op == "selp":
        a, b, c = s
        if a == b:
            op.op, op.srcs = "mov", (a,)
            return True
        if c in predicates and a == one and b == zero:
            op.op, op.srcs = "mov", (c,)
            return True
        if c in predicates and a == zero and b == one:
            op.op, op.srcs = "xor", (c, one)
            return True
    return False


def local_cse(fn: Function) -> bool:
    """Common subexpressions inside a basic block (if-conversion and unrolling repeat the
    same conditions and addresses): a repeated pure operation on unchanged operands
    becomes a copy of the first result, which propagation then removes."""
    changed = False
    for b in fn.blocks.values():
        version: dict[V, int] = {}
        avail: dict[tuple, tuple[V, int]] = {}
        for op in b.ops:
            if op.kind in ("alu", "sreg") and op.op != "mov":
                key = (op.op, tuple((s, version.get(s, 0)) if isinstance(s, V) else s
                                    for s in op.srcs))
                hit = avail.get(key)
                if hit is not None and version.get(hit[0], 0) == hit[1] and hit[0] != op.dst:
                    op.op, op.srcs = "mov", (hit[0],)
                    changed = True
                elif op.dst not in {s for s in op.srcs if isinstance(s, V)}:
                    avail[key] = (op.dst, version.get(op.dst, 0) + 1)
            if op.dst is not None:
                version[op.dst] = version.get(op.dst, 0) + 1
    return changed


def fold_addresses(fn: Function) -> bool:
    """[x + $sym] memory operands: the link-time constant goes into the address offset, so
    `a[i]` needs no add (x must be defined once, so it is the same value at both ops)."""
    defs = _defs(fn)
    changed = False
    for b in fn.blocks.values():
        for op in b.ops:
            if not op.touches_memory() or op.offset_sym is not None:
                continue
            base = op.srcs[0]
            if isinstance(base, Sym):
                op.srcs, op.offset_sym = (Imm(0),) + op.srcs[1:], base
                changed = True
                continue
            if not isinstance(base, V) or len(defs.get(base, [])) != 1:
                continue
            d = defs[base][0]
            if d.op not in ("add", "sub") or d.offset_sym is not None:
                continue
            x, y = d.srcs
            if d.op == "add" and isinstance(x, Sym):
                x, y = y, x
            if not isinstance(y, Sym) or d.op == "sub":
                if d.op == "add" and isinstance(y, Imm) and isinstance(x, V | Sym) and (
                        not isinstance(x, V) or len(defs.get(x, [])) == 1):
                    op.srcs, op.offset = (x,) + op.srcs[1:], op.offset + y.value
                    changed = True
                continue
            if isinstance(x, V) and len(defs.get(x, [])) != 1:
                continue
            op.srcs, op.offset_sym = (x,) + op.srcs[1:], y
            changed = True
    return changed


def _cheap(defs: dict[V, list[Op]], v: V, depth: int) -> bool:
    """v is computed, within `depth` stages, from special registers and constants alone
    (every op on the way defined once)."""
    ops = defs.get(v, [])
    if depth < 1 or len(ops) != 1:
        return False
    op = ops[0]
    if op.kind == "sreg":
        return True
    return op.kind == "alu" and all(_cheap(defs, u, depth - 1) for u in op.uses())


def rematerialize(fn: Function) -> bool:
    """Values cheap to recompute from special registers (tid, ctaid, laneid, warpid, and
    one operation on them such as tid * 4) are recomputed in each block that uses them
    instead of being kept live across blocks: a register and write-back tokens saved for
    a slot or two. Inside loops only single special-register reads are repeated (an extra
    stage there would be paid every iteration)."""
    defs = _defs(fn)
    in_loop = set().union(*natural_loops(fn).values()) if fn.blocks else set()
    changed = False
    for b in fn.blocks.values():
        changed |= _rematerialize_block(fn, b, defs, 1 if b.name in in_loop else 2)
    return changed


def rematerialize_in(fn: Function, names, depth: int) -> None:
    """rematerialize in the named blocks only, at `depth` in loops too (cuda.softcall:
    values live across a float routine call cost the routine its registers)."""
    defs = _defs(fn)
    for name in names:
        _rematerialize_block(fn, fn.blocks[name], defs, depth)


def _recompute(fn: Function, defs, v: V, local: dict[V, V], out: list[Op], origin) -> V:
    if v not in local:
        op = defs[v][0]
        srcs = tuple(_recompute(fn, defs, u, local, out, origin) if isinstance(u, V) else u
                     for u in op.srcs)
        local[v] = fn.new_vreg()
        out.append(Op(op.op, local[v], srcs, op.offset, origin, op.offset_sym, op.access))
    return local[v]


def _rematerialize_block(fn: Function, b, defs, depth: int) -> bool:
    local: dict[V, V] = {}
    defined = {op.dst for op in b.ops if op.dst is not None}
    new_ops: list[Op] = []
    for op in b.ops:
        for u in op.uses():
            if u not in defined and _cheap(defs, u, depth):
                _recompute(fn, defs, u, local, new_ops, op.origin)
        op.srcs = tuple(local.get(x, x) if isinstance(x, V) else x for x in op.srcs)
        new_ops.append(op)
    c = b.term.cond if isinstance(b.term, CondBr) else None
    if isinstance(c, V) and c not in defined and _cheap(defs, c, depth):
        b.term.cond = _recompute(fn, defs, c, local, new_ops, None)
    if local:
        b.ops = new_ops
    return bool(local)


def dead_code(fn: Function) -> bool:
    live = _liveness(fn)
    changed = False
    for name, b in fn.blocks.items():
        needed = set(live[name][1]) | set(term_uses(b.term))
        kept = []
        for op in reversed(b.ops):
            if op.dst is not None and op.dst not in needed and op.kind in _PURE_KINDS:
                changed = True
                continue
            kept.append(op)
            if op.dst is not None:
                needed.discard(op.dst)
            needed |= set(op.uses())
        b.ops = kept[::-1]
    return changed


def _liveness(fn: Function) -> dict[str, tuple[set[V], set[V]]]:
    """(live_in, live_out) of every block, over vregs."""
    use: dict[str, set[V]] = {}
    kill: dict[str, set[V]] = {}
    for name, b in fn.blocks.items():
        u: set[V] = set()
        k: set[V] = set()
        for op in b.ops:
            u |= {x for x in op.uses() if x not in k}
            if op.dst is not None:
                k.add(op.dst)
        u |= {x for x in term_uses(b.term) if x not in k}
        use[name], kill[name] = u, k
    live_in = {n: set() for n in fn.blocks}
    live_out = {n: set() for n in fn.blocks}
    changed = True
    while changed:
        changed = False
        for name in reversed(list(fn.blocks)):
            out = set().union(*(live_in[s] for s in successors(fn.blocks[name].term)))
            inn = use[name] | (out - kill[name])
            if out != live_out[name] or inn != live_in[name]:
                live_in[name], live_out[name] = inn, out
                changed = True
    return {n: (live_in[n], live_out[n]) for n in fn.blocks}


liveness = _liveness


def _interference(fn: Function) -> dict[V, set[V]]:
    live = _liveness(fn)
    graph: dict[V, set[V]] = {}

    def edge(a, b):
        if a != b:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set()).add(a)

    for name, b in fn.blocks.items():
        now = set(live[name][1]) | set(term_uses(b.term))
        for op in reversed(b.ops):
            if op.dst is not None:
                for x in now:
                    if not (op.op == "mov" and op.srcs[0] == x):
                        edge(op.dst, x)
                now.discard(op.dst)
            now |= set(op.uses())
        for x in live[name][0]:
            for y in live[name][0]:
                edge(x, y)
    return graph


def coalesce(fn: Function, predicates: set[V]) -> bool:
    """Merge the two sides of register moves that never interfere."""
    graph = _interference(fn)
    mapping: dict[V, V] = {}

    def find(v):
        while v in mapping:
            v = mapping[v]
        return v

    merged = False
    for b in fn.blocks.values():
        for op in b.ops:
            if op.op != "mov" or not isinstance(op.srcs[0], V):
                continue
            a, s = find(op.dst), find(op.srcs[0])
            if a == s or s in graph.get(a, set()):
                continue
            mapping[s] = a
            graph.setdefault(a, set()).update(graph.pop(s, set()))
            for n in graph[a]:
                graph[n].discard(s)
                graph[n].add(a)
            if s in predicates:
                predicates.add(a)
            merged = True
    if not merged:
        return False
    for b in fn.blocks.values():
        for op in b.ops:
            op.srcs = tuple(find(x) if isinstance(x, V) else x for x in op.srcs)
            if op.dst is not None:
                op.dst = find(op.dst)
        if isinstance(b.term, CondBr) and isinstance(b.term.cond, V):
            b.term.cond = find(b.term.cond)
        b.ops = [op for op in b.ops if not (op.op == "mov" and op.srcs[0] == op.dst)]
    return True


def simplify_cfg(fn: Function) -> bool:
    changed = False
    # jump threading over blocks that only jump on
    forward = {n: b.term.target for n, b in fn.blocks.items()
               if not b.ops and isinstance(b.term, Goto) and n != fn.entry
               and b.term.target != n}

    def final(n):
        seen = set()
        while n in forward and n not in seen:
            seen.add(n)
            n = forward[n]
        return n

    for b in fn.blocks.values():
        t = b.term
        if isinstance(t, Goto) and final(t.target) != t.target:
            t.target, changed = final(t.target), True
        elif isinstance(t, CondBr):
            tt, ff = final(t.taken), final(t.not_taken)
            if (tt, ff) != (t.taken, t.not_taken):
                t.taken, t.not_taken, changed = tt, ff, True
            if tt == ff:
                b.term = Goto(tt)
        elif hasattr(t, "target") and final(t.target) != t.target:
            t.target, changed = final(t.target), True
    # merge straight-line chains
    preds = fn.predecessors()
    for name in list(fn.blocks):
        b = fn.blocks.get(name)
        while b is not None and isinstance(b.term, Goto) and not b.keep_whole:
            nxt = b.term.target
            c = fn.blocks[nxt]
            if nxt == fn.entry or nxt == name or len(preds[nxt]) != 1 or c.keep_whole:
                break
            b.ops += c.ops
            b.term = c.term
            del fn.blocks[nxt]
            preds = fn.predecessors()
            changed = True
    # unreachable blocks
    seen, todo = set(), [fn.entry]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        todo += successors(fn.blocks[n].term)
    for n in list(fn.blocks):
        if n not in seen:
            del fn.blocks[n]
            changed = True
    return changed


def optimize(fn: Function, predicates: set[V]) -> Function:
    for _ in range(20):
        changed = propagate(fn, predicates)
        changed |= local_cse(fn)
        changed |= fold_addresses(fn)
        changed |= rematerialize(fn)
        changed |= dead_code(fn)
        changed |= simplify_cfg(fn)
        if not changed:
            changed = coalesce(fn, predicates)
            if not changed:
                break
    return fn

