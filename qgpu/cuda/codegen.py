"""cuda.codegen: the back-end driver, one PTX kernel to a KernelTemplate.

    lower (PTX -> IR) -> optimize + if-convert -> layout (ROM order) -> schedule (stages, blocks)
    -> exits threaded -> regalloc -> emit (machine Program with relocations for launch-time values)

When the registers do not suffice, cuda.spill runs the back end again (from a fresh IR)
with values kept in local memory.

and the ROM-size check, whose error names the kernel and the count.
"""

from __future__ import annotations

from qgpu.cuda import ptx
from qgpu.cuda.ifconvert import if_convert
from qgpu.cuda.ir import Barrier, CondBr, Goto, Ret, Sym, V, successors
from qgpu.cuda.layout import block_order
from qgpu.cuda.link import KernelTemplate, Reloc
from qgpu.cuda.lower import lower
from qgpu.cuda.optimize import optimize
from qgpu.cuda.regalloc import RegisterError, allocate
from qgpu.cuda.schedule import MBlock, schedule
from qgpu.cuda.shape import Shape
from qgpu.cuda.softcall import call_floats, inline_floats
from qgpu.cuda.spill import compile_spilled
from qgpu.errors import CompileError, ProgramError
from qgpu.isa import Bar, Block, Br, Exit, Imm, Instr, Jmp, Program, Reg, limits


def compile_kernel(module: ptx.PModule, ptx_name: str, display_name: str,
                   shape: Shape | None = None) -> KernelTemplate:
    """The kernel's template; `shape` (a 2-D/3-D launch) fixes its threadIdx/blockIdx."""
    fn, float_calls = _middle(module, ptx_name, display_name, shape)
    mblocks = _machine_blocks(fn, display_name)
    spilled: list = []
    try:
        regs, pressure, live = allocate(mblocks, display_name)
    except RegisterError as exc:      # compile again with values in local memory
        done, (regs, pressure, live) = compile_spilled(
            lambda: _middle(module, ptx_name, display_name, shape)[0],
            lambda f: _machine_blocks(f, display_name),
            lambda mb: allocate(mb, display_name), display_name, exc)
        fn, mblocks, spilled = done.fn, done.mblocks, done.spilled
    program, relocs = emit(mblocks, regs, live, display_name)
    stats = {"blocks": len(program.blocks), "instructions": program.instruction_count(),
             "pressure": pressure, "origins": block_origins(mblocks),
             "dynamic_shared": fn.dynamic_shared, "device_sites": fn.device_sites,
             "device_strings": fn.device_strings, "float_calls": float_calls}
    if spilled:
        stats["local_words"] = len(spilled)     # register spills (cuda.spill)
    return KernelTemplate(display_name, program, relocs, fn.n_params, fn.shared_bytes,
                          pressure, stats, fn.warp_scratch)


def _middle(module: ptx.PModule, ptx_name: str, display_name: str, shape: Shape | None):
    """The kernel's IR in ROM order, floats lowered, and its float-call record."""
    fn, predicates = lower(module, ptx_name, display_name, shape)
    inline_floats(fn)           # float32 as integer code (cuda.softcall, cuda.softfloat)
    optimize(fn, predicates)
    while if_convert(fn):
        optimize(fn, predicates)
    order = block_order(fn)
    fn.blocks = {n: fn.blocks[n] for n in order}
    return fn, call_floats(fn)


def _machine_blocks(fn, display_name: str) -> list[MBlock]:
    mblocks = thread_exits(schedule(fn))
    if len(mblocks) > limits.ROM_BLOCKS:
        raise CompileError(f"kernel {display_name}: needs {len(mblocks)} machine blocks; the "
                           f"program ROM holds {limits.ROM_BLOCKS} (simplify the kernel: "
                           "fewer divisions, branches or straight-line work)")
    return mblocks


def thread_exits(mblocks: list[MBlock]) -> list[MBlock]:
    """A block that jumps to an empty `exit` block exits itself (its EXEC and END tokens
    are saved, and nothing is live after it, so its write-back shrinks); blocks no longer
    reached are dropped, the others keep their order (the layout's reconvergence)."""
    empty_exits = {mb.name for mb in mblocks if not mb.stages and isinstance(mb.term, Ret)}
    for mb in mblocks:
        if isinstance(mb.term, Goto) and mb.term.target in empty_exits:
            mb.term = Ret()
    by_name = {mb.name: mb for mb in mblocks}
    seen, todo = set(), [mblocks[0].name]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += successors(by_name[name].term)
    return [mb for mb in mblocks if mb.name in seen]


def block_origins(mblocks: list[MBlock]) -> list[dict]:
    """Per machine block, where its operations came from: {"ptx": PTX line numbers,
    "source": [(file, line)] from the PTX's .loc} (qgpu.view highlights them)."""
    out = []
    for mb in mblocks:
        origins = [op.origin for st in mb.stages for op in st if op.origin is not None]
        out.append({"ptx": sorted({o.line for o in origins if getattr(o, "line", 0)}),
                    "source": sorted({o.loc for o in origins if getattr(o, "loc", None)})})
    return out


def _operand(x, regs: dict[V, int]):
    if isinstance(x, V):
        return Reg(regs[x])
    if isinstance(x, Sym):
        return Imm(0)
    return x


def emit(mblocks: list[MBlock], regs: dict[V, int], live, name: str
         ) -> tuple[Program, list[Reloc]]:
    index = {mb.name: i for i, mb in enumerate(mblocks)}
    blocks: list[Block] = []
    relocs: list[Reloc] = []
    accesses: dict[tuple[int, int, int], tuple[int, int]] = {}
    for bi, mb in enumerate(mblocks):
        stages = []
        defs: set[V] = set()
        for st in mb.stages:
            row = []
            for op in st:
                if op.dst is not None:
                    defs.add(op.dst)
                dst = regs[op.dst] if op.dst is not None else None
                srcs = tuple(_operand(x, regs) for x in op.srcs)
                if op.op == "mov" and isinstance(op.srcs[0], V) and srcs[0] == Reg(dst):
                    continue                      # coloured onto its own source
                k = len(row)
                si = len(stages)
                for j, x in enumerate(op.srcs):
                    if isinstance(x, Sym):
                        relocs.append(Reloc(bi, si, k, j, x.name))
                if op.offset_sym is not None:
                    relocs.append(Reloc(bi, si, k, "offset", op.offset_sym.name))
                if op.access is not None:
                    accesses[(bi, si, k)] = op.access
                row.append(Instr(op.op, dst, srcs, limits.u32(op.offset)))
            if row:
                stages.append(row)
        t = mb.term
        if isinstance(t, Goto):
            term = Jmp(index[t.target])
        elif isinstance(t, Barrier):
            term = Bar(index[t.target], t.scope)
        elif isinstance(t, CondBr):
            term = Br(Reg(regs[t.cond]), index[t.taken], index[t.not_taken])
        elif isinstance(t, Ret):
            term = Exit()
        else:
            raise CompileError(f"internal error: terminator {t!r}")
        # a removed self-move leaves its register as its source left it: written back
        # only if some instruction of this block wrote it
        written = {ins.dst for st in stages for ins in st if ins.dst is not None}
        writeback = frozenset(regs[v] for v in defs & live[mb.name][1]) & written
        blocks.append(Block(stages, term, writeback))
    try:
        return Program(blocks, name, accesses=accesses), relocs
    except ProgramError as exc:
        raise CompileError(f"internal error compiling {name}: {exc}") from exc
