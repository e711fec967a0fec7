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
    stage runs its operations slot by slot in program order) whenever either one writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.cuda.ir import BasicBlock, CondBr, Function, Goto, Op, V
from qgpu.cuda.optimize import liveness
from qgpu.errors import CompileError
from qgpu.isa import machine


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
                if ops[i].kind != "load" or op.kind != "load":
                    preds[j].append((i, 0))
            mem.append(j)
    height = [1] * n
    for j in reversed(range(n)):
        for i, lat in preds[j]:
            height[i] = max(height[i], height[j] + lat)
    return preds, height


def _list_schedule(fn: Function, ops: list[Op]) -> list[list[list[Op]]]:
    """Machine blocks (lists of stages of ops) for one basic block's ops. At each cut a
    special-register value still needed later is re-read by a clone of its op instead of
    being carried across the cut."""
    ops = list(ops)
    preds, height = _dependences(ops)
    stage_of: dict[int, int] = {}
    left = set(range(len(ops)))
    stages: list[list[int]] = []
    while left:
        s = len(stages)
        if s and s % machine.STAGES == 0:
            _clone_special_reads(fn, ops, preds, height, stage_of, left)
        cur: list[int] = []
        while len(cur) < machine.SLOTS:
            ready = [j for j in left if all(
                i in stage_of and (stage_of[i] < s if lat else stage_of[i] <= s)
                for i, lat in preds[j])]
            if not ready:
                break
            j = max(ready, key=lambda k: (height[k], -k))
            stage_of[j] = s
            cur.append(j)
            left.discard(j)
        if not cur:
            raise CompileError("internal error: the scheduler made no progress")
        stages.append(sorted(cur))
    grouped = [stages[k:k + machine.STAGES] for k in range(0, len(stages), machine.STAGES)]
    return [[[ops[j] for j in st] for st in piece] for piece in grouped]


def _clone_special_reads(fn, ops, preds, height, stage_of, left) -> None:
    for i in list(stage_of):
        if ops[i].kind != "sreg":
            continue
        users = [j for j in left if (i, 1) in preds[j]]
        if not users:
            continue
        clone = Op(ops[i].op, fn.new_vreg(), (), origin=ops[i].origin)
        c = len(ops)
        ops.append(clone)
        preds.append([])
        height.append(max(height[j] for j in users) + 1)
        left.add(c)
        old = ops[i].dst
        for j in users:
            preds[j] = [(c, 1) if p == (i, 1) else p for p in preds[j]]
            ops[j].srcs = tuple(clone.dst if x == old else x for x in ops[j].srcs)


def schedule_block(fn: Function, b: BasicBlock, live_out: set[V]) -> list[MBlock]:
    """The machine blocks for basic block b (the first one carries b's name)."""
    rename_locals(fn, b, live_out)
    pieces = _list_schedule(fn, b.ops) or [[]]
    if b.single_block and len(pieces) > 1:
        raise CompileError(f"internal error: loop {b.name} does not fit one machine block")
    names = [b.name] + [f"{b.name}#{k}" for k in range(1, len(pieces))]
    return [MBlock(name, pieces[k], Goto(names[k + 1]) if k + 1 < len(names) else b.term,
                   b.name) for k, name in enumerate(names)]


def schedule(fn: Function) -> list[MBlock]:
    """Every basic block of fn as machine blocks (in fn's block order)."""
    live = liveness(fn)
    out: list[MBlock] = []
    for name, b in fn.blocks.items():
        out += schedule_block(fn, b, live[name][1])
    return out
