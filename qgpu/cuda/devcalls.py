"""cuda.devcalls: the two device calls clang leaves in a kernel, printf and assert, lowered
to machine code that writes records into the printf buffer (cuda.printf).

clang compiles `printf(fmt, ...)` to `vprintf(fmt, argbuf)`, the arguments stored in a
stack frame (the local "depot") with C's vararg layout (an int 4 bytes, a double 8 and
aligned to 8, a pointer 4), and `assert(e)` to a call of `__assertfail(cond, file, line,
func, size)` under a branch. The machine has no local memory: the depot's slots become
virtual registers (a store into one is a move), and the call becomes

    printf:  old = atom.add [counter], 1 + n ; if old + 1 + n <= capacity:
                 data[old] = site id + 1 ; data[old + 1 ..] = the n argument words
    assert:  junk = ld [TRAP_BASE + 4 * id]     (out of bounds: the fault detector's TRAP)
             old = atom.add [counter], 3 ; if it fits:
                 data[old] = ASSERT_FLAG | id + 1 ; data[old + 1] = ctaid << 16 | tid
                 data[old + 2] = junk
             the lane exits

(`counter`, `data`, `capacity`: link-time symbols of the launch's buffer). The format
string, `%s` literals and the assert's texts are read from the PTX at compile time and
kept with the site: they cost no memory. Anything else in the depot (an array indexed at
run time) is still refused as local memory, naming the PTX and source line.
"""

from __future__ import annotations

import struct

from qgpu.cuda import ptx
from qgpu.cuda.ir import CondBr, Goto, Ret, Sym
from qgpu.cuda.printf import Arg, Conv, Site, parse_format, trap_address
from qgpu.cuda.ptx import fail
from qgpu.isa import Imm

_W32 = {"u32", "b32", "s32"}
_W64 = {"u64", "b64", "s64"}
_LOCAL = ("local memory (an array indexed at run time, or a stack frame) is not supported")


def _defined(ins) -> str | None:
    d = ins.operands[0] if ins.operands else None
    return d.name if isinstance(d, ptx.PReg) and ins.parts[0] not in ("st", "call") else None


class DeviceCalls:
    """printf and assert of one kernel being lowered (`lw`: the cuda.lower.Lowering)."""

    def __init__(self, lw):
        self.lw = lw
        self.sites: list[Site] = []
        self.strings: set[str] = set()          # variables read at compile time
        self.depot: dict[str, int] = {}         # register -> byte offset into the depot
        self.syms: dict[str, str] = {}          # register -> a global variable's address
        self.const64: dict[str, int] = {}       # %rd register -> its constant
        self.promoted: dict[str, object] = {}   # %fd register -> the float it promotes
        self.pairs: dict[str, tuple] = {}       # %rd register -> {lo, hi} words
        self.skip: set[int] = set()             # instructions that only compute addresses
        self.slots: dict[int, tuple[str, object]] = {}   # depot offset -> (kind, value)
        self.params: dict[str, object] = {}     # st.param of the call being set up
        self.retval = 0
        self._analyse()

    # --- what the registers hold (clang's PTX defines each of these once) ---
    def _analyse(self) -> None:
        body = [i for i in self.lw.pfn.body if isinstance(i, ptx.PInstr)]
        depot_vars = {v.name for v in self.lw.pfn.variables if v.space == "local"}
        variables = {v.name for v in self.lw.module.variables if v.space in ("global", "const")}
        counts: dict[str, int] = {}
        for ins in body:
            d = _defined(ins)
            if d:
                counts[d] = counts.get(d, 0) + 1
        for _ in range(2):                # a definition may follow its use in the text
            for ins in body:
                d, op, ops = _defined(ins), ins.parts[0], ins.operands
                if d is None or counts[d] != 1 or ins.guard is not None:
                    continue
                src = [o for o in ops[1:]]
                if op == "mov" and isinstance(src[0], ptx.PSym) and src[0].name in depot_vars:
                    self.depot[d] = 0
                elif op in ("mov", "cvta") and isinstance(src[0], ptx.PReg) \
                        and src[0].name in self.depot and "global" not in ins.parts:
                    self.depot[d] = self.depot[src[0].name]
                elif op == "add" and len(src) == 2 and any(
                        isinstance(s, ptx.PReg) and s.name in self.depot for s in src) \
                        and any(isinstance(s, ptx.PImm) for s in src):
                    reg = next(s for s in src if isinstance(s, ptx.PReg))
                    imm = next(s for s in src if isinstance(s, ptx.PImm))
                    self.depot[d] = self.depot[reg.name] + imm.value
                elif op == "mov" and isinstance(src[0], ptx.PSym) and src[0].name in variables:
                    self.syms[d] = src[0].name
                elif op == "cvta" and "global" in ins.parts and isinstance(src[0], ptx.PReg) \
                        and src[0].name in self.syms:
                    self.syms[d] = self.syms[src[0].name]
                elif op == "mov" and set(ins.parts[1:]) & _W64 and isinstance(src[0], ptx.PImm):
                    self.const64[d] = src[0].value
                elif op == "mov" and set(ins.parts[1:]) & _W64 and isinstance(src[0], ptx.PVec) \
                        and len(src[0].items) == 2:
                    self.pairs[d] = src[0].items     # two ints merged into one store
                elif ins.opcode == "cvt.f64.f32":
                    self.promoted[d] = src[0]
                else:
                    continue
                if d in self.depot:
                    self.skip.add(id(ins))
        for ins in body:
            if id(ins) not in self.skip and self._touches_depot(ins, depot_vars) \
                    and not self._slot_store(ins) and not self._argbuf(ins):
                raise fail(ins, _LOCAL)

    def _touches_depot(self, ins, depot_vars) -> bool:
        for o in ins.operands:
            base = o.base if isinstance(o, ptx.PAddr) else o
            if isinstance(base, ptx.PReg) and base.name in self.depot:
                return True
            if isinstance(base, ptx.PSym) and base.name in depot_vars:
                return True
            if isinstance(base, ptx.PReg) and base.name in ("%SP", "%SPL"):
                return True
        return False

    def _slot_store(self, ins) -> bool:
        """st [depot + k], value: a vararg being stored (unguarded, a value not an address
        into the depot)."""
        ops = ins.operands
        return ins.parts[0] == "st" and ins.guard is None and len(ops) == 2 \
            and isinstance(ops[0], ptx.PAddr) and isinstance(ops[0].base, ptx.PReg) \
            and ops[0].base.name in self.depot \
            and not (isinstance(ops[1], ptx.PReg) and ops[1].name in self.depot)

    def _argbuf(self, ins) -> bool:
        ops = ins.operands
        return ins.parts[0] == "st" and "param" in ins.parts and isinstance(ops[0], ptx.PAddr) \
            and isinstance(ops[0].base, ptx.PSym) and ops[0].base.name not in self.lw.params

    # --- lowering ---
    def intercept(self, ins: ptx.PInstr) -> bool:
        """Lower `ins` here when it belongs to a printf or assert (True), else False."""
        if id(ins) in self.skip or ins.opcode == "cvt.f64.f32":
            return True      # a promoted float is stored as its f32 bits (any other use of
            # the double is refused by cuda.lower as 64-bit)
        op, ops = ins.parts[0], ins.operands
        if self._slot_store(ins):
            self._store_slot(ins)
            return True
        if self._argbuf(ins):
            self.params[ops[0].base.name] = ops[1]
            return True
        if op == "call":
            if ins.guard is not None:
                raise fail(ins, "a guarded call is not supported")
            callee = next((o.name for o in ops if isinstance(o, ptx.PSym)
                           and o.name in ("vprintf", "__assertfail")), None)
            if callee == "vprintf":
                self._printf(ins)
            elif callee == "__assertfail":
                self._assert(ins)
            else:
                return False
            self.params = {}
            return True
        if op == "ld" and "param" in ins.parts and isinstance(ops[1], ptx.PAddr) \
                and isinstance(ops[1].base, ptx.PSym) and ops[1].base.name.startswith("retval"):
            self.lw.b.emit("mov", self.lw.dst(ops[0], ins), Imm(self.retval))
            return True
        return False

    def _store_slot(self, ins) -> None:
        addr, val = ins.operands
        off = self.depot[addr.base.name] + addr.offset
        typ = ins.parts[-1]
        name = val.name if isinstance(val, ptx.PReg) else None
        if typ in _W32 and name in self.syms:
            self.slots[off] = ("str", self.syms[name])
        elif typ in _W32:
            reg = self.lw.reg(f"$depot{off}")
            self.lw.b.emit("mov", reg, self.lw.value(val, ins))
            self.slots[off] = ("int", reg)
        elif typ == "f64" and name in self.promoted:
            reg = self.lw.reg(f"$depot{off}")
            self.lw.b.emit("mov", reg, self.lw.value(self.promoted[name], ins))
            self.slots[off] = ("float", reg)
        elif typ in _W64 | {"f64"} and (isinstance(val, ptx.PImm) or name in self.const64):
            # a double constant, or two int constants whose stores LLVM merged
            bits = (val.value if isinstance(val, ptx.PImm) else self.const64[name]) \
                & (1 << 64) - 1
            self.slots[off] = ("const64", bits)
            self.slots[off + 4] = ("const", bits >> 32)
        elif typ in _W64 and name in self.pairs:
            for k, item in enumerate(self.pairs[name]):
                reg = self.lw.reg(f"$depot{off + 4 * k}")
                self.lw.b.emit("mov", reg, self.lw.value(item, ins))
                self.slots[off + 4 * k] = ("int", reg)
        else:
            self.slots[off] = ("wide", typ)

    def _where(self, ins) -> str:
        return f"{ins.loc[0]}:{ins.loc[1]}" if ins.loc else f"PTX line {ins.line}"

    def _string(self, operand, ins, what: str) -> tuple[str, bytes]:
        name = operand.name if isinstance(operand, ptx.PSym) else self.syms.get(
            getattr(operand, "name", None))
        var = next((v for v in self.lw.module.variables if v.name == name), None)
        if var is None or var.init is None or var.elem_bytes != 1:
            raise fail(ins, f"{what} must be a string literal")
        data = bytes(v & 0xFF for v in var.init)
        self.strings.add(name)
        return name, data.split(b"\0", 1)[0]

    def _printf(self, ins) -> None:
        where = self._where(ins)
        _, fmt = self._string(self.params.get("param0"), ins, "printf's format")
        pieces = parse_format(fmt, where)
        buf = self.params.get("param1")
        if isinstance(buf, ptx.PImm):
            base = None
        elif isinstance(buf, ptx.PReg) and buf.name in self.depot:
            base = self.depot[buf.name]
        else:
            raise fail(ins, "printf's arguments are not where clang puts them (a va_list "
                            "passed on is not supported)")
        args, words, off = [], [], 0
        for conv in (p for p in pieces if isinstance(p, Conv)):
            size = 8 if conv.kind == "double" else 4
            off = -(-off // size) * size
            kind, value = self.slots.get(base + off, (None, None)) if base is not None \
                else (None, None)
            args.append(self._arg(conv, kind, value, words, ins))
            off += size
        site = Site(len(self.sites), where, tuple(pieces), tuple(args), len(words))
        self.sites.append(site)
        self.retval = len(args)         # CUDA's printf returns the number of arguments
        self._append(site.header, words)

    def _arg(self, conv: Conv, kind, value, words: list, ins) -> Arg:
        text = conv.text.decode("latin-1", "replace")
        if kind is None:
            raise fail(ins, f"printf conversion '{text}' has no argument")
        if conv.kind == "str":
            if kind != "str":
                raise fail(ins, f"printf conversion '{text}': qgpu prints string literals "
                                "only (a string chosen at run time or a char array cannot be "
                                "read from the machine's memory)")
            return Arg(const=self._string(ptx.PSym(value), ins, "%s's argument")[1])
        if conv.kind == "double":
            if kind == "float":
                words.append(value)
                return Arg(word=len(words) - 1)
            if kind == "const64":
                return Arg(const=struct.unpack("<d", struct.pack("<Q", value))[0])
            raise fail(ins, f"printf conversion '{text}' needs a float argument (promoted to "
                            "double), not " + ("a double computed in double precision"
                                               if kind == "wide" else f"an {kind}"))
        if kind == "int":
            words.append(value)
            return Arg(word=len(words) - 1)
        if kind in ("const", "const64"):     # (const64: its low word is this int)
            return Arg(const=value & 0xFFFFFFFF)
        what = {"str": "a string", "float": "a float", "wide": "a 64-bit value"}[kind]
        raise fail(ins, f"printf conversion '{text}' is given {what}; give it an int "
                        "(or use the conversion of that type)")

    def _append(self, header: int, words: list, extra: int = 0) -> None:
        """Reserve 1 + len(words) words of the buffer atomically and write the record
        there when it fits (a record that does not fit is skipped: the host reports the
        counter, so the user learns the size needed)."""
        b = self.lw.b
        k = 1 + len(words)
        old, end, fits = b.tmp(), b.tmp(), b.tmp()
        b.emit("atom.global.add", old, Sym("printf:counter"), Imm(k))
        b.emit("add", end, old, Imm(k))
        b.emit("setle.u", fits, end, Sym("printf:capacity"))
        write, after = b.new_block("printf"), b.new_block("printed")
        b.finish(CondBr(fits, write.name, after.name))
        b.start(write)
        a, addr = b.tmp(), b.tmp()
        b.emit("shl", a, old, Imm(2))
        b.emit("add", addr, a, Sym("printf:data"))
        b.emit("st.global", None, addr, Imm(header), offset=0)
        for j, w in enumerate(words):
            b.emit("st.global", None, addr, w, offset=4 * (j + 1))
        b.finish(Goto(after.name))
        b.start(after)

    def _assert(self, ins) -> None:
        p = self.params
        _, cond = self._string(p.get("param0"), ins, "assert's condition")
        _, file = self._string(p.get("param1"), ins, "assert's file")
        _, func = self._string(p.get("param3"), ins, "assert's function")
        line = p.get("param2")
        line = line.value if isinstance(line, ptx.PImm) else 0
        # the call's own line table names the user's file (__FILE__ is a temporary copy's
        # path when the source was given as a string)
        where = f"{ins.loc[0]}:{ins.loc[1]}" if ins.loc and ins.loc[1] == line else \
            f"{file.decode('utf-8', 'replace')}:{line}"
        site = Site(len(self.sites), where, assertion=(cond.decode("utf-8", "replace"),
                                                       func.decode("utf-8", "replace")))
        self.sites.append(site)
        b = self.lw.b
        junk, t, c, c16, ids = (b.tmp() for _ in range(5))
        b.emit("ld.global", junk, Imm(trap_address(site.id)))
        b.emit("tid", t)
        b.emit("ctaid", c)
        b.emit("shl", c16, c, Imm(16))
        b.emit("or", ids, c16, t)
        # the loaded word is stored too (a load nothing reads would be dead code); without
        # the fault detector it is whatever word the address aliases
        self._append(site.header, [ids, junk])
        b.finish(Ret())
