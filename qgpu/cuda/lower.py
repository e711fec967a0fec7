"""cuda.lower: PTX instructions to native machine operations (instruction selection).

It owns the meaning of every PTX form qgpu accepts: which native operations compute it,
how predicates become 0/1 registers, how guarded instructions become selects or short
branches, where shared variables live, which generic addresses are global or shared, and
the CompileError for everything else (64-bit, floating point, local memory, calls), which
names the PTX line and, through the line table, the CUDA source line.
"""

from __future__ import annotations

from qgpu.cuda import ptx
from qgpu.cuda.devcalls import DeviceCalls
from qgpu.cuda.ir import Barrier, BasicBlock, CondBr, Function, Goto, Op, Ret, Sym, V
from qgpu.cuda.ptx import fail
from qgpu.cuda.select import select
from qgpu.cuda.shape import Shape, special
from qgpu.cuda.wide import handles, lower_wide
from qgpu.errors import CompileError
from qgpu.isa import Imm, limits

_WIDE_TYPES = {"u64", "s64", "b64"}
_INT32 = {"u32", "s32", "b32"}
_NARROW_PARAMS = {"u8", "s8", "b8", "u16", "s16", "b16"}
_SREG_OPS = {"%tid.x": "tid", "%ctaid.x": "ctaid"}
# CUDA's warp is 32 threads (cuda.warp): lane tid & 31, warp tid >> 5 (the linear tid)
_SREG_WARP = {"%laneid": ("and", 31), "%warpid": ("shr.u", 5)}
_SREG_CONST = {"%tid.y": 0, "%tid.z": 0, "%ctaid.y": 0, "%ctaid.z": 0, "%ntid.y": 1,
               "%ntid.z": 1, "%nctaid.y": 1, "%nctaid.z": 1,
               "%nwarpid": limits.MAX_THREADS_PER_CTA // 32}   # CUDA's 32-lane warps
_SREG_SYMS = {"%ntid.x": "ntid", "%nctaid.x": "nctaid"}


class Builder:
    """Appends operations to the current basic block and opens new ones."""

    def __init__(self, fn: Function):
        self.fn = fn
        self.cur: BasicBlock | None = None
        self.origin = None
        self._count = 0

    def tmp(self) -> V:
        return self.fn.new_vreg()

    def emit(self, op: str, dst, *srcs, offset: int = 0, access=None) -> None:
        self.cur.ops.append(Op(op, dst, tuple(srcs), offset, self.origin, access=access))

    def new_block(self, hint: str, keep_whole: bool = False) -> BasicBlock:
        self._count += 1
        blk = BasicBlock(f"{hint}.{self._count}", keep_whole=keep_whole)
        self.fn.blocks[blk.name] = blk
        return blk

    def finish(self, term) -> None:
        self.cur.term = term
        self.cur = None

    def start(self, blk: BasicBlock) -> None:
        self.cur = blk


def _check_types(ins: ptx.PInstr) -> None:
    parts = set(ins.parts[1:])   # float forms: cuda.float32 maps or refuses them
    if handles(ins):
        return                  # a 64-bit form computed exactly on register pairs (cuda.wide)
    wide_product = "wide" in parts and ins.parts[-1] not in ("u16", "s16")   # 16x16 -> 32 is fine
    if parts & _WIDE_TYPES or wide_product or ins.parts[0] in ("addc", "subc") or "cc" in parts:
        raise fail(ins, "64-bit arithmetic is not supported (use 32-bit int/unsigned; "
                        "long long and 64-bit products do not fit the 32-bit machine)")
    stored = ins.parts[0] == "st" and isinstance(ins.operands[-1], ptx.PReg)
    for o in ins.operands:
        if stored and o is ins.operands[-1] and o.name.startswith("%rd"):
            continue            # st.u32 of a 64-bit register stores its low word (cuda.wide)
        regs = [o] if isinstance(o, ptx.PReg) else (
            [o.first, o.second] if isinstance(o, ptx.PPair) else [])
        for r in regs:
            if r.name.startswith(("%rd", "%fd")):
                raise fail(ins, f"register {r.name} is 64-bit (long, double or a 64-bit "
                                f"pointer); not supported")


class Lowering:
    """Lowers one PTX entry function to an ir.Function."""

    def __init__(self, module: ptx.PModule, pfn: ptx.PFunction, display: str | None = None,
                 shape: Shape | None = None):
        self.module = module
        # a 2-D/3-D launch: threadIdx.y etc. computed from the linear ids (cuda.shape)
        self.shape = shape if shape is not None and not shape.linear else None
        self.pfn = pfn
        self.kname = display or pfn.name         # the source name, for messages
        self.fn = Function(self.kname, {}, "entry", n_params=len(pfn.params))
        self.b = Builder(self.fn)
        self.regs: dict[str, V] = {}
        self.params = {name: i for i, (name, _) in enumerate(pfn.params)}
        self.param_bits = {i: 64 if typ in ("u64", "s64", "b64") else 32
                           for i, (_, typ) in enumerate(pfn.params)}
        self.shared: dict[str, int] = {}
        self.globals = {v.name for v in module.variables if v.space in ("global", "const")}
        self.spaces: dict[str, set[str]] = {}

    # --- operands ---
    def reg(self, name: str) -> V:
        if name not in self.regs:
            self.regs[name] = self.fn.new_vreg()
        return self.regs[name]

    def value(self, o, ins: ptx.PInstr):
        """A source operand as a V, Imm or Sym (special registers read into a temp)."""
        if isinstance(o, V | Imm | Sym):   # already lowered (expansions reuse select)
            return o
        if isinstance(o, ptx.PImm):
            if not -(1 << 31) <= o.value < (1 << 32):
                raise fail(ins, f"constant {o.value} does not fit in 32 bits")
            return Imm(o.value)
        if isinstance(o, ptx.PReg):
            n = o.name
            if self.shape is not None:
                v = special(n, self.shape, self.b.emit, self.b.tmp)
                if v is not None:
                    return v
            if n in _SREG_OPS:
                t = self.b.tmp()
                self.b.emit(_SREG_OPS[n], t)
                return t
            if n in _SREG_WARP:
                return self.warp_sreg(n)
            if n in _SREG_SYMS:
                return Sym(_SREG_SYMS[n])
            if n in _SREG_CONST:
                return Imm(_SREG_CONST[n])
            if n.startswith("%rd"):      # a 32-bit use of a 64-bit pair: its low word
                return self.reg(n + ":lo")
            if n.startswith("%lanemask_"):
                return self.lanemask(n[len("%lanemask_"):], ins)
            if n.startswith("%") and "." in n or n in ("%clock", "%smid", "%gridid"):
                raise fail(ins, f"special register {n} is not supported")
            return self.reg(n)
        if isinstance(o, ptx.PSym):
            return self.symbol_address(o.name, ins)
        raise fail(ins, f"operand {o} is not supported here")

    def warp_sreg(self, name: str):
        """%laneid or %warpid of CUDA's 32-thread warp, from the linear thread index."""
        tid, t = self.b.tmp(), self.b.tmp()
        op, k = _SREG_WARP[name]
        self.b.emit("tid", tid)
        self.b.emit(op, t, tid, Imm(k))
        return t

    def lanemask(self, kind: str, ins):
        bit, t = self.b.tmp(), self.b.tmp()
        lane = self.warp_sreg("%laneid")
        self.b.emit("shl", bit, Imm(2 if kind in ("le", "gt") else 1), lane)
        if kind == "eq":
            self.b.emit("shl", t, Imm(1), lane)
            return t
        if kind not in ("lt", "le", "gt", "ge"):
            raise fail(ins, f"%lanemask_{kind} is not supported")
        self.b.emit("sub", t, bit, Imm(1))                  # lanes below (lt) / up to (le)
        if kind in ("lt", "le"):
            return t
        inv = self.b.tmp()
        self.b.emit("xor", inv, t, Imm(0xFFFFFFFF))
        return inv

    def symbol_address(self, name: str, ins):
        if name in self.shared:
            return Imm(self.shared[name])
        if name in self.globals:
            var = next(v for v in self.module.variables if v.name == name)
            if var.problem:
                raise fail(ins, var.problem)
            return Sym(f"global:{name}")
        if name in self.params:
            raise fail(ins, f"the address of parameter {name} is taken (pass arrays as "
                            "pointers)")
        raise fail(ins, f"unknown symbol '{name}'")

    def dst(self, o, ins: ptx.PInstr) -> V:
        if isinstance(o, V):
            return o
        if not isinstance(o, ptx.PReg) or not o.name.startswith("%") or "." in o.name:
            raise fail(ins, f"destination {o} must be a register")
        return self.reg(o.name)

    def address(self, o, ins: ptx.PInstr) -> tuple[object, int]:
        if not isinstance(o, ptx.PAddr):
            raise fail(ins, "expected an address operand [base+offset]")
        if o.base is None:
            return Imm(o.offset), 0
        base = self.value(o.base, ins)
        if isinstance(base, Imm):
            return Imm(base.value + o.offset), 0
        return base, o.offset

    # --- memory spaces ---
    def infer_spaces(self) -> None:
        """Which space (global/shared) each register's address may point into: generic
        loads and stores take their space from it."""
        changed = True
        while changed:
            changed = False
            for ins in self.pfn.body:
                if not isinstance(ins, ptx.PInstr) or not ins.operands:
                    continue
                d = ins.operands[0]
                if not isinstance(d, ptx.PReg):
                    continue
                op = ins.parts[0]
                new: set[str] = set()
                if op == "cvta":
                    new = {"shared" if "shared" in ins.parts else "global"}
                elif op == "ld" and "param" in ins.parts:
                    new = {"global"}
                elif op in ("mov", "add", "sub", "mad", "selp", "and", "or"):
                    for s in ins.operands[1:]:
                        if isinstance(s, ptx.PReg):
                            new |= self.spaces.get(s.name, set())
                        elif isinstance(s, ptx.PSym):
                            new |= {"shared"} if s.name in self.shared else (
                                {"global"} if s.name in self.globals else set())
                if not new <= self.spaces.get(d.name, set()):
                    self.spaces[d.name] = self.spaces.get(d.name, set()) | new
                    changed = True

    def space_of(self, ins: ptx.PInstr) -> str:
        parts = ins.parts
        for sp in ("global", "shared"):
            if sp in parts:
                return sp
        if "const" in parts:
            return "global"       # __constant__ data lives in global memory
        if "local" in parts:
            raise fail(ins, "local memory (an array indexed at run time, or a stack frame) "
                            "is not supported")
        addr = next((o for o in ins.operands if isinstance(o, ptx.PAddr)), None)
        if addr is not None and isinstance(addr.base, ptx.PSym):
            return "shared" if addr.base.name in self.shared else "global"
        if addr is not None and isinstance(addr.base, ptx.PReg):
            sp = self.spaces.get(addr.base.name, set())
            if len(sp) == 1:
                return next(iter(sp))
        raise fail(ins, "a generic-address memory access whose space (global or shared) "
                        "qgpu cannot tell apart; use the pointer without mixing spaces")

    # --- the function ---
    def allocate_shared(self) -> None:
        used = {o.base.name for ins in self.pfn.body if isinstance(ins, ptx.PInstr)
                for o in ins.operands if isinstance(o, ptx.PAddr) and isinstance(o.base, ptx.PSym)}
        used |= {o.name for ins in self.pfn.body if isinstance(ins, ptx.PInstr)
                 for o in ins.operands if isinstance(o, ptx.PSym)}
        variables = list(self.pfn.variables) + [
            v for v in self.module.variables if v.space == "shared" and v.name in used]
        offset = 0
        dynamic = [v for v in variables if v.space == "shared" and v.dynamic]
        for v in variables:
            if v.space != "shared" or v.dynamic:
                continue
            offset = -(-offset // max(v.align, 4)) * max(v.align, 4)
            self.shared[v.name] = offset
            offset += v.size
        limit = limits.SHARED_WORDS * 4
        if offset > limit:
            raise CompileError(f"kernel {self.kname}: __shared__ data needs {offset} bytes; "
                               f"shared memory holds {limit} bytes ({limits.SHARED_WORDS} "
                               "words) per CTA")
        if dynamic:
            # every extern __shared__ array starts where the static ones end (as in CUDA:
            # they alias); the launch gives their size (shared_mem=, --shared-bytes)
            align = max(max(v.align, 4) for v in dynamic)
            offset = -(-offset // align) * align
            for v in dynamic:
                self.shared[v.name] = offset
            self.fn.dynamic_shared = True
        self.fn.shared_bytes = offset

    def run(self) -> Function:
        # the local depot may hold printf's arguments only (cuda.devcalls refuses the rest)
        self.calls = DeviceCalls(self)
        for name, typ in self.pfn.params:
            # a float scalar: its bit pattern; char/short: extended by ld.param; long long:
            # a register pair (cuda.wide)
            if typ not in _INT32 | _NARROW_PARAMS | _WIDE_TYPES and typ != "f32":
                raise CompileError(f"kernel {self.kname}: parameter {name} has PTX type "
                                   f".{typ}; only integers, float and pointers are "
                                   f"supported")
        self.allocate_shared()
        self.infer_spaces()
        entry = BasicBlock("entry")
        self.fn.blocks["entry"] = entry
        self.b.start(entry)
        body = self.pfn.body
        labels = {x.name for x in body if isinstance(x, ptx.PLabel)}
        targets = {o.name for x in body if isinstance(x, ptx.PInstr) and x.parts[0] == "bra"
                   for o in x.operands if isinstance(o, ptx.PSym)}
        for item in body:
            if isinstance(item, ptx.PLabel):
                if item.name not in targets:
                    continue
                blk = self.label_block(item.name)
                if self.b.cur is not None:
                    self.b.finish(Goto(blk.name))
                self.b.start(blk)
                continue
            if self.b.cur is None:      # unreachable code after a branch: give it a block
                self.b.start(self.b.new_block("dead"))
            self.b.origin = item
            if self.calls.intercept(item):
                continue
            _check_types(item)
            self.instr(item, labels)
        if self.b.cur is not None:
            self.b.finish(Ret())
        self.predicates = {v for n, v in self.regs.items() if n.startswith("%p")}
        self.fn.device_sites = self.calls.sites
        self.fn.device_strings = self.calls.strings
        return self.fn

    def label_block(self, name: str) -> BasicBlock:
        if name not in self.fn.blocks:
            self.fn.blocks[name] = BasicBlock(name)
        return self.fn.blocks[name]

    def fallthrough(self) -> BasicBlock:
        return self.b.new_block("ft")

    def instr(self, ins: ptx.PInstr, labels) -> None:
        op = ins.parts[0]
        if op == "bra":
            target = ins.operands[0]
            if not isinstance(target, ptx.PSym) or target.name not in labels:
                raise fail(ins, "branch to an unknown label")
            tblk = self.label_block(target.name)
            if ins.guard is None:
                self.b.finish(Goto(tblk.name))
                return
            cond = self.reg(ins.guard.name)
            nxt = self.fallthrough()
            t, f = (nxt.name, tblk.name) if ins.guard_negated else (tblk.name, nxt.name)
            self.b.finish(CondBr(cond, t, f))
            self.b.start(nxt)
            return
        if ins.guard is not None:
            self.guarded(ins)
            return
        if op in ("ret", "exit"):
            self.b.finish(Ret())
            return
        if op in ("bar", "barrier") and "warp" not in ins.parts:
            if len(ins.parts) > 1 and ins.parts[1] not in ("sync", "aligned"):
                raise fail(ins, f"{ins.opcode} is not supported (only bar.sync / "
                                "__syncthreads)")
            nxt = self.b.new_block("bar")
            self.b.finish(Barrier(nxt.name))
            self.b.start(nxt)
            return
        self.select(ins)

    def select(self, ins: ptx.PInstr) -> None:
        """Emit native operations for one unguarded PTX data instruction (cuda.select;
        cuda.wide for the 64-bit forms)."""
        if handles(ins):
            lower_wide(self, ins)
            return
        select(self, ins)

    def guarded(self, ins: ptx.PInstr) -> None:
        """@p instr: pure register results become selects; anything with an effect beyond
        its destination (memory, shuffles, control) goes into a short branch."""
        cond = self.reg(ins.guard.name)
        op = ins.parts[0]
        pure = op not in ("ld", "st", "atom", "red", "shfl", "vote", "bar", "barrier", "ret",
                          "exit", "div", "rem", "call", "activemask", "trap", "match") \
            and not handles(ins)        # 64-bit results are register pairs: a short branch
        d = ins.operands[0] if ins.operands else None
        if pure and isinstance(d, ptx.PReg) and not isinstance(d, ptx.PPair):
            old = self.reg(d.name)
            new_name = f"{d.name}$guard{ins.line}"
            select(self, ptx.PInstr(ins.opcode, [ptx.PReg(new_name)] + ins.operands[1:],
                                  line=ins.line, text=ins.text, loc=ins.loc))
            new = self.reg(new_name)
            a, b = (old, new) if ins.guard_negated else (new, old)
            self.b.emit("selp", old, a, b, cond)
            return
        inside, after = self.b.new_block("guard"), self.b.new_block("guarded")
        t, f = (after.name, inside.name) if ins.guard_negated else (inside.name, after.name)
        self.b.finish(CondBr(cond, t, f))
        self.b.start(inside)
        plain = ptx.PInstr(ins.opcode, ins.operands, line=ins.line, text=ins.text, loc=ins.loc)
        self.instr(plain, set())
        if self.b.cur is not None:
            self.b.finish(Goto(after.name))
        self.b.start(after)


def lower(module: ptx.PModule, name: str, display: str | None = None,
          shape: Shape | None = None) -> tuple[Function, set[V]]:
    """Lower the PTX entry function `name` of a parsed module; also returns the virtual
    registers that hold predicates (always 0 or 1)."""
    pfn = module.functions[name]
    if pfn.error is not None:
        raise pfn.error
    for ins in pfn.body:
        if isinstance(ins, ptx.PInstr) and ins.parts[0] == "call":
            if any(isinstance(o, ptx.PSym) and o.name in ("vprintf", "__assertfail")
                   for o in ins.operands):
                continue            # cuda.devcalls: records in the printf buffer
            raise fail(ins, "a call that clang did not inline (recursion, a __noinline__ or "
                            "external function); qgpu needs every device function inlined")
    lw = Lowering(module, pfn, display, shape)
    fn = lw.run()
    return fn, lw.predicates

