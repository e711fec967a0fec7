"""cuda.schedule: packing each basic block's operations into machine blocks.

A machine block holds up to STAGES dependent stages of up to SLOTS independent operations.
Per basic block: local values are renamed (every definition that does not leave the block
gets a fresh register, so only true dependences remain), a dependence DAG is built, and a
list scheduler fills stages in order of each operation's longest path to the block's end.
A basic block needing more stages is cut into several machine blocks joined by `jmp`;
special registers used after a cut are re-read there rather than carried across it.

Dependences (the block reads registers at stage start, writes at stage end):
  * a value is read in a later stage than the one that computes it;
  * the final write of a register that is also live on entry comes no earlier than the
    stage of the last read of the entry value;
  * memory operations keep program order: a later one in the same or a later stage (a
    stage runs its operations slot by slot in program order) whenever either one writes
    (local memory's, the spill words of cuda.spill, only against the same local word);
  * a machine block reads memory before it writes any (the ISA's rule): a load or atomic
    that follows a write goes to the next machine block.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.cuda.ir import BasicBlock, CondBr, Function, Goto, Op, V
from qgpu.cuda.optimize import liveness
from qgpu.errors import CompileError
from qgpu.isa import OPS, limits


@dataclass
class MBlock:
    """A machine block over virtual registers, before register allocation."""
    name: str
    stages: list[list[Op]] = field(default_factory=list)
    term: object = None
    basic_block: str = ""


def rename_locals(fn: Function, b: BasicBlock, live_out: set[V]) -> None:
    """Give each definition that is not the block's last definition of a live-out
    register a fresh virtual register, and rewrite the uses it reaches."""
    last_def: dict[V, int] = {}
    for i, op in enumerate(b.ops):
        if op.dst is not None:
            last_def[op.dst] = i
    current: dict[V, V] = {}
    for i, op in enumerate(b.ops):
        op.srcs = tuple(current.get(s, s) if isinstance(s, V) else s for s in op.srcs)
        if op.dst is not None:
            if op.dst in live_out and last_def[op.dst] == i:
                current.pop(op.dst, None)
            else:
                fresh = fn.new_vreg()
                current[op.dst] = fresh
                op.dst = fresh
    if isinstance(b.term, CondBr) and isinstance(b.term.cond, V):
        b.term.cond = current.get(b.term.cond, b.term.cond)


def _dependences(ops: list[Op]) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """preds[j] = [(i, latency)], and each op's longest path (in stages) to the end."""
    n = len(ops)
    preds: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    producer: dict[V, int] = {}
    readers: dict[V, list[int]] = {}
    mem: list[int] = []
    for j, op in enumerate(ops):
        for s in op.uses():
            if s in producer:
                preds[j].append((producer[s], 1))
            else:
                readers.setdefault(s, []).append(j)
        if op.dst is not None:
            for r in readers.get(op.dst, []):        # entry value read before the rewrite
                if r != j:
                    preds[j].append((r, 0))
            producer[op.dst] = j
        if op.touches_memory():
            for i in mem:
                if _ordered(ops[i], op):
                    preds[j].append((i, 0))
            mem.append(j)
    height = [1] * n
    for j in reversed(range(n)):
        for i, lat in preds[j]:
            height[i] = max(height[i], height[j] + lat)
    return preds, height


def _local(op: Op) -> bool:
    return OPS[op.op].space == "local"


def _ordered(a: Op, b: Op) -> bool:
    """Memory operations a (earlier) and b keep their order: either writes, and (local
    memory, a thread's spill words: cuda.spill) both are local at the same address, or
    neither is local."""
    if a.kind == "load" and b.kind == "load":
        return False
    if _local(a) or _local(b):
        return _local(a) and _local(b) and (a.srcs[0], a.offset) == (b.srcs[0], b.offset)
    return True


def _reads_memory(op: Op) -> bool:
    return op.kind in ("load", "atomic")


def _writes_memory(op: Op) -> bool:
    return op.kind in ("store", "atomic")


class Pressure:
    """The number of values holding a register while a block is scheduled: values read by
    unscheduled operations, and values the block's end needs (live out, the branch)."""

    LIMIT = 12      # above this, prefer operations that free registers (the allocator's
                    # interference is finer than this count, so leave it some room)

    def __init__(self, ops: list[Op], live_in: set[V], pinned: set[V]):
        self.pinned = pinned
        self.uses: dict[V, int] = {}
        for op in ops:
            for u in set(op.uses()):
                self.uses[u] = self.uses.get(u, 0) + 1
        self.live = {v for v in live_in if v in self.uses or v in pinned}

    def delta(self, op: Op) -> int:
        freed = sum(1 for u in set(op.uses()) if self.uses[u] == 1 and u not in self.pinned)
        made = 1 if op.dst is not None and (op.dst in self.uses or op.dst in self.pinned) else 0
        return made - freed

    def place(self, op: Op) -> None:
        for u in set(op.uses()):
            self.uses[u] -= 1
            if self.uses[u] == 0 and u not in self.pinned:
                self.live.discard(u)
        if op.dst is not None and (op.dst in self.uses or op.dst in self.pinned):
            self.live.add(op.dst)

    def moved(self, old: V, new: V, users: int) -> None:
        """`users` unscheduled readers of old now read new (a re-read special register)."""
        self.uses[old] -= users
        if self.uses[old] == 0 and old not in self.pinned:
            self.live.discard(old)
        self.uses[new] = users

    def high(self) -> bool:
        return len(self.live) >= self.LIMIT


def _list_schedule(fn: Function, ops: list[Op], pressure: Pressure | None = None,
                   ordered: bool = False) -> list[list[list[Op]]]:
    """Machine blocks (lists of stages of ops) for one basic block's ops.

    A machine block must read memory before it writes any (the circuit has no forwarding
    inside a block): once a block holds a store or atomic, loads and atomics wait for the
    next block, which starts early if nothing else can go on; likewise once it holds
    MAX_BLOCK_WRITES writes. At each cut a
    special-register value still needed later is re-read by a clone of its op instead of
    being carried across the cut."""
    ops = list(ops)
    originals = len(ops)        # ops from here on are clones made at cuts
    preds, height = _dependences(ops)
    stage_of: dict[int, int] = {}
    left = set(range(len(ops)))
    pieces: list[list[list[int]]] = []
    piece: list[list[int]] = []
    wrote, writes = False, 0
    s = 0
    while left:
        cur: list[int] = []
        while len(cur) < limits.SLOTS:
            ready = [j for j in left if not (wrote and _reads_memory(ops[j]))
                     and not (writes == limits.MAX_BLOCK_WRITES and _writes_memory(ops[j]))
                     and all(
                i in stage_of and (stage_of[i] < s if lat else stage_of[i] <= s)
                for i, lat in preds[j])]
            if not ready:
                break
            if ordered:
                j = min(ready)
            elif pressure is not None and pressure.high():
                j = max(ready, key=lambda k: (-pressure.delta(ops[k]), height[k], -k))
            else:
                j = max(ready, key=lambda k: (height[k], -k))
            if pressure is not None:
                pressure.place(ops[j])
            stage_of[j] = s
            cur.append(j)
            left.discard(j)
            wrote = wrote or _writes_memory(ops[j])
            writes += _writes_memory(ops[j])
        if cur:
            piece.append(sorted(cur))
            s += 1
        elif not wrote:
            raise CompileError("internal error: the scheduler made no progress")
        if left and (len(piece) == limits.STAGES or not cur):
            pieces.append(piece)
            progress = any(j < originals for st in piece for j in st)
            piece, wrote, writes = [], False, 0
            s += 1          # a new block: results of the last one are visible
            if progress:    # a block of clones alone carries its values (no endless cuts)
                _recompute_cheap_after_cut(fn, ops, preds, height, stage_of, left,
                                           pressure)
    if piece or not pieces:
        pieces.append(piece)
    return [[[ops[j] for j in st] for st in p] for p in pieces]


CHEAP_DEPTH = 2     # re-compute after a cut: special registers and one op on top of them


def _cheap_depth(ops: list[Op], producer: dict[V, int], i: int) -> int | None:
    """Stages needed to recompute op i from special registers and constants, or None."""
    op = ops[i]
    if op.kind == "sreg":
        return 1
    if op.kind != "alu":
        return None
    depth = 0
    for x in op.uses():
        if producer.get(x, i) >= i:         # live in (or the entry value it rewrites)
            return None
        d = _cheap_depth(ops, producer, producer[x])
        if d is None:
            return None
        depth = max(depth, d)
    return depth + 1


def _recompute_cheap_after_cut(fn, ops, preds, height, stage_of, left, pressure) -> None:
    """After a cut, values that are cheap to recompute from special registers (tid,
    tid * 4, ...) are recomputed by clones in the new machine block instead of being
    carried across the cut (a register and write-back tokens each)."""
    producer = {op.dst: k for k, op in enumerate(ops) if op.dst is not None}

    def clone(i: int, h: int) -> int:
        op = ops[i]
        srcs, deps = [], []
        for x in op.srcs:
            if isinstance(x, V):
                c = clone(producer[x], h + 1)
                deps.append((c, 1))
                x = ops[c].dst
                if pressure is not None:
                    pressure.uses[x] = pressure.uses.get(x, 0) + 1
            srcs.append(x)
        new = Op(op.op, fn.new_vreg(), tuple(srcs), op.offset, op.origin, op.offset_sym,
                 op.access)
        ops.append(new)
        preds.append(deps)
        height.append(h)
        left.add(len(ops) - 1)
        return len(ops) - 1

    for i in sorted(stage_of):
        users = [j for j in left if (i, 1) in preds[j]]
        depth = _cheap_depth(ops, producer, i) if users else None
        if depth is None or depth > CHEAP_DEPTH:
            continue
        c = clone(i, max(height[j] for j in users) + 1)
        old, new = ops[i].dst, ops[c].dst
        for j in users:
            preds[j] = [(c, 1) if p == (i, 1) else p for p in preds[j]]
            ops[j].srcs = tuple(new if x == old else x for x in ops[j].srcs)
        if pressure is not None:
            pressure.moved(old, new, len(users))


def schedule_block(fn: Function, b: BasicBlock, live_in: set[V], live_out: set[V]
                   ) -> list[MBlock]:
    """The machine blocks for basic block b (the first one carries b's name)."""
    rename_locals(fn, b, live_out)
    pinned = set(live_out) | ({b.term.cond} if isinstance(b.term, CondBr) else set())
    pieces = _list_schedule(fn, b.ops, Pressure(b.ops, live_in, pinned), b.ordered)
    names = [b.name] + [f"{b.name}#{k}" for k in range(1, len(pieces))]
    return [MBlock(name, pieces[k], Goto(names[k + 1]) if k + 1 < len(names) else b.term,
                   b.name) for k, name in enumerate(names)]


def schedule(fn: Function) -> list[MBlock]:
    """Every basic block of fn as machine blocks (in fn's block order)."""
    live = liveness(fn)
    out: list[MBlock] = []
    for name, b in fn.blocks.items():
        out += schedule_block(fn, b, *live[name])
    return out
