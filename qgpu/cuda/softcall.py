"""cuda.softcall: where cuda.softfloat's integer sequences go in a kernel.

Two passes of cuda.codegen, for every engine (the interpreter and the model run the same
program, so `--check` compares like with like; the native float operations stay in the
ISA as the reference the sequences are tested against, and for what is not lowered):

  * inline_floats, right after lowering: compares, min/max, setnan and the conversions
    (5-33 operations each) replace their float operation in place, so the optimizer and
    if-conversion see plain integer code.
  * call_floats, after the block order is fixed: add/mul/fma (~160 operations, ~40
    machine blocks each; add and mul are fma with a constant operand, folded). A kind
    used once is inlined; a kind used at several places is one shared subroutine. The
    caller moves the operands to the routine's argument registers and a return-site id
    to another, and jumps; the routine ends in a tree of branches on the id's bits back
    to the block after each call (the ISA has no indirect jump; `br` is per lane, so
    lanes that reach the routine from different sites and run it together still return
    to their own sites). The routine's blocks go at the end of the ROM: lanes that call
    it from divergent code run it once the other lanes of their warp have moved past
    the routine's callers or wait at a barrier (min-PC scheduling).

Values live across any call are live through the whole routine, so the register
allocator keeps them out of its temporaries: a kernel that needs more than the 15
registers spills as any other (cuda.spill).
"""

from __future__ import annotations

from qgpu.cuda import ptx
from qgpu.cuda.float32 import is_float
from qgpu.cuda.ir import BasicBlock, CondBr, Function, Goto, Op, V
from qgpu.cuda.optimize import dead_code, rematerialize_in
from qgpu.cuda.softfloat import (
    FMA_FAMILY,
    LOWERED,
    ONE,
    RID_SHIFT,
    ROUTINES,
    SIGN,
    Emitter,
    emit_float,
)
from qgpu.isa import Imm


def _expand(fn: Function, op: Op) -> list[Op]:
    """op's integer sequence ending in a move to op's destination."""
    e = Emitter(fn.new_vreg, op.origin)
    res = emit_float(op.op, e, op.srcs)
    return [*e.ops, Op("mov", op.dst, (Imm(res) if isinstance(res, int) else res,), 0,
                       op.origin)]


# expanded in place after the optimizer: its common subexpressions between two uses on
# one operand (floorf(a) and rintf(a)) would stay alive between them
LATE = frozenset({"cvt.f32.f32"})


def inline_floats(fn: Function, kinds=None) -> None:
    """Replace each lowered float operation of `kinds` (default: those that are neither
    routines nor LATE) by its sequence."""
    kinds = kinds or (LOWERED - set(ROUTINES) - LATE)
    for b in fn.blocks.values():
        if any(op.op in kinds for op in b.ops):
            out: list[Op] = []
            for op in b.ops:
                out += _expand(fn, op) if op.op in kinds else [op]
            b.ops = out


def call_floats(fn: Function) -> dict[str, int]:
    """Place add/mul/fma (inline once, else a shared routine per kind); returns the
    number of call sites per routine kind (for the kernel's stats)."""
    for b in fn.blocks.values():      # float code keeps the order written (few values
        if any(is_float(op.origin) for op in b.ops      # alive; cuda.softfloat)
               if isinstance(op.origin, ptx.PInstr)):
            b.ordered = True
    inline_floats(fn, LATE)
    counts: dict[str, int] = {}
    for b in fn.blocks.values():
        for op in b.ops:
            if op.op in ROUTINES:
                counts[op.op] = counts.get(op.op, 0) + 1
    family = {k: n for k, n in counts.items() if k in FMA_FAMILY}
    if len(family) > 1 and sum(family.values()) > 2:
        # several kinds: one fma routine for all (a + b = fma(a, 1, b), a * b =
        # fma(a, b, -0)), one copy in the ROM instead of one per kind
        for b in fn.blocks.values():
            for op in b.ops:
                if op.op == "add.f32":
                    op.op, op.srcs = "fma.f32", (op.srcs[0], Imm(ONE), op.srcs[1])
                elif op.op == "mul.f32":
                    op.op, op.srcs = "fma.f32", (*op.srcs, Imm(SIGN))
        counts = {k: n for k, n in counts.items() if k not in FMA_FAMILY}
        counts["fma.f32"] = sum(family.values())
    calls: dict[str, int] = {}
    for kind, n in counts.items():        # each pass finds its sites afresh (blocks split)
        if n == 1:
            name, i = next((name, i) for name, b in fn.blocks.items()
                           for i, op in enumerate(b.ops) if op.op == kind)
            _inline_ordered(fn, name, i)
        else:
            _make_routine(fn, kind, n)
            calls[kind] = n
    if calls:
        _recompute_cheap_values(fn)
    return calls


REMAT_DEPTH = 5     # operations on special registers and constants recomputed after calls


def _recompute_cheap_values(fn: Function) -> None:
    """Values computed from special registers and constants alone (thread and block
    indices, shared-memory addresses built from them) are recomputed in every block that
    uses them instead of being kept live: a value live across a call is live through
    the whole routine, and the routine needs most of the register file."""
    rematerialize_in(fn, [n for n in fn.blocks if not n.startswith("sf.")], REMAT_DEPTH)
    dead_code(fn)


def _fresh(fn: Function, name: str, taken: set[str] = frozenset()) -> str:
    """name, or name with a number, used by no block of fn (nor in `taken`): a block is
    split again by a later kind's pass, and two blocks of one name would be one."""
    k, fresh = 1, name
    while fresh in fn.blocks or fresh in taken:
        k += 1
        fresh = f"{name}.{k}"
    return fresh


def _inline_ordered(fn: Function, name: str, i: int) -> None:
    """The sequence in place of op i of block `name`, as a block of its own scheduled in
    the written order (the block is split around it)."""
    b = fn.blocks[name]
    body = BasicBlock(_fresh(fn, f"{name}.sf"), ordered=True)
    body.ops = _expand(fn, b.ops[i])
    rest = BasicBlock(_fresh(fn, f"{name}.sf.after", {body.name}))
    rest.ops, rest.term = b.ops[i + 1:], b.term
    b.ops, b.term = b.ops[:i], Goto(body.name)
    body.term = Goto(rest.name)
    order = list(fn.blocks)
    k = order.index(name) + 1
    order[k:k] = [body.name, rest.name]
    fn.blocks[body.name], fn.blocks[rest.name] = body, rest
    fn.blocks = {n: fn.blocks[n] for n in order}


def _make_routine(fn: Function, kind: str, n_sites: int) -> None:
    n_args = 3 if kind == "fma.f32" else 2
    args = [fn.new_vreg() for _ in range(n_args)]
    rid = fn.new_vreg()
    e = Emitter(fn.new_vreg)
    res = emit_float(kind, e, tuple(args), rid)
    entry = BasicBlock(f"sf.{kind}", ordered=True)
    entry.ops = list(e.ops)
    # split every block at each call of this kind (several calls in one block: the
    # continuation is split again on a later pass of the loop)
    conts: list[str] = []
    order = list(fn.blocks)
    new_order: list[str] = []
    for name in order:
        b = fn.blocks[name]
        new_order.append(name)
        while True:
            i = next((k for k, op in enumerate(b.ops) if op.op == kind), None)
            if i is None:
                break
            op = b.ops[i]
            k = len(conts)
            cont = BasicBlock(_fresh(fn, f"{name}.ret{k}"))
            cont.ops = [Op("mov", op.dst, (res,), 0, op.origin), *b.ops[i + 1:]]
            cont.term = b.term
            b.ops = b.ops[:i] + [Op("mov", a, (s,), 0, op.origin)
                                 for a, s in zip(args, op.srcs, strict=True)]
            b.ops.append(Op("mov", rid, (Imm(k << RID_SHIFT),), 0, op.origin))
            b.term = Goto(entry.name)
            fn.blocks[cont.name] = cont
            new_order.append(cont.name)
            conts.append(cont.name)
            b = cont
    assert len(conts) == n_sites
    tree_blocks: list[BasicBlock] = []
    entry.term = _return_tree(fn, entry, e.tag, list(range(n_sites)), conts,
                              (n_sites - 1).bit_length() - 1, tree_blocks)
    fn.blocks[entry.name] = entry
    new_order.append(entry.name)
    for tb in tree_blocks:
        fn.blocks[tb.name] = tb
        new_order.append(tb.name)
    fn.blocks = {n: fn.blocks[n] for n in new_order}


def _return_tree(fn: Function, at: BasicBlock, rid: V, ids: list[int], conts: list[str],
                 bit: int, out: list[BasicBlock]):
    """The terminator of `at` that sends each id in ids to its continuation, testing
    bits from `bit` down (new blocks for the inner tests are appended to out)."""
    if len(ids) == 1:
        return Goto(conts[ids[0]])
    ones = [k for k in ids if k >> bit & 1]
    zeros = [k for k in ids if not k >> bit & 1]
    if not ones or not zeros:
        return _return_tree(fn, at, rid, ids, conts, bit - 1, out)
    t = fn.new_vreg()
    at.ops.append(Op("and", t, (rid, Imm(1 << (bit + RID_SHIFT)))))

    def side(group: list[int]) -> str:
        if len(group) == 1:
            return conts[group[0]]
        blk = BasicBlock(f"{at.name.split('/')[0]}/{len(out)}")
        out.append(blk)
        blk.term = _return_tree(fn, blk, rid, group, conts, bit - 1, out)
        return blk.name

    return CondBr(t, side(ones), side(zeros))
