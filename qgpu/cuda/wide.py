"""cuda.wide: the 64-bit integer forms clang introduces for 32-bit sources, exactly, on
pairs of 32-bit registers.

clang computes some 32-bit loops in closed form through 64-bit values
(`for (i = 0; i < n; i++) s += i` becomes `mul.wide.u32`, `shr.u64`, `cvt.u32.u64`), and
64-bit products appear in `__umul64hi`-style code. Each 64-bit PTX register (%rd) lives in
two virtual registers, low and high word; the forms below compute both exactly (no range
assumption), and the high words that nothing reads are removed by the optimizer's dead
code elimination. Every other 64-bit form (division, 64-bit atomics, vector accesses) is
still refused by cuda.lower, naming the PTX and source line.

    mul.wide.{u,s}32, mad.wide.{u,s}32     the 64-bit product (+ a 64-bit addend)
    mul.lo.{u,s,b}64                       the low 64 bits of a 64 x 64 product
    add/sub.{u,s,b}64                      with the carry / borrow between the words
    and/or/xor.b64, mov, selp              per word; mov.b64 {lo, hi} unpacks and packs
    shl.b64, shr.{u,s}64 by a constant     words shifted into each other
    cvt between 8/16/32 and 64 bits        zero/sign extension, truncation to the low bits
    setp.{cmp}.{u,s}64                     high words first, low words (unsigned) on a tie
    bfe.{u,s}64 with constant fields       two shifts of the pair
    ld/st .u64 .s64 .b64 (global, shared)  two word accesses, low word first; a 32-bit
                                           load into a 64-bit register extends it
    ld.param.{u,s,b}64                     a long long parameter: two link-time words
"""

from __future__ import annotations

from qgpu.cuda import ptx
from qgpu.cuda.ir import Sym
from qgpu.cuda.ptx import fail
from qgpu.cuda.select import emit_mulhi, narrow_load, param_index
from qgpu.isa import Imm

_WIDE = {"u64", "s64", "b64"}
_OPS = {"mul", "mad", "add", "sub", "and", "or", "xor", "mov", "selp", "shl", "shr", "cvt",
        "setp", "ld", "ldu", "st", "bfe"}
_CVT = {"u8", "s8", "u16", "s16", "u32", "s32", "b32", "u64", "s64", "b64"}
_CMP_U = {"eq": "seteq", "ne": "setne", "lt": "setlt.u", "le": "setle.u", "gt": "setgt.u",
          "ge": "setge.u", "lo": "setlt.u", "ls": "setle.u", "hi": "setgt.u", "hs": "setge.u"}


def _wide_reg(o) -> bool:
    return isinstance(o, ptx.PReg) and o.name.startswith("%rd")


def _word_vector(o) -> bool:
    """{lo, hi}: two 32-bit operands (a 64-bit value's words)."""
    return isinstance(o, ptx.PVec) and len(o.items) == 2 and all(
        isinstance(x, ptx.PReg | ptx.PImm) and not _wide_reg(x) for x in o.items)


def handles(ins: ptx.PInstr) -> bool:
    """Whether this instruction is one of the 64-bit forms lowered here."""
    parts = set(ins.parts[1:])
    op = ins.parts[0]
    if op == "mov" and "b64" in parts and len(ins.operands) == 2:
        d, a = ins.operands   # unpack {lo, hi} <- %rd, or pack %rd <- {lo, hi}
        if (_word_vector(d) and _wide_reg(a)) or (_wide_reg(d) and _word_vector(a)):
            return True
    if op not in _OPS or "cc" in parts:
        return False
    wide = bool(parts & _WIDE) or "wide" in parts or any(_wide_reg(o) for o in ins.operands)
    if not wide:
        return False
    if op in ("mul", "mad") and "wide" in parts:
        return ins.parts[-1] in ("u32", "s32")
    if op == "mul":
        return "lo" in parts
    if op == "mad":
        return False
    if op in ("shl", "shr"):
        return isinstance(ins.operands[2], ptx.PImm)
    if op == "cvt":
        return all(t in _CVT for t in ins.parts[-2:])
    if op in ("ld", "ldu"):     # a 64-bit load, or a narrower one into a 64-bit register
        return ins.parts[-1] in _CVT | {"b8", "b16"} and _wide_reg(ins.operands[0]) \
            and not any(p.startswith("v") and p[1:].isdigit() for p in ins.parts)
    if op == "st":
        return ins.parts[-1] in _WIDE and isinstance(ins.operands[1], ptx.PReg | ptx.PImm) \
            and not any(p.startswith("v") and p[1:].isdigit() for p in ins.parts)
    if op == "bfe":
        return all(isinstance(o, ptx.PImm) for o in ins.operands[2:])
    return all(isinstance(o, ptx.PReg | ptx.PImm) and not isinstance(o, ptx.PPair)
               for o in ins.operands)


class _Pairs:
    def __init__(self, lw):
        self.lw, self.b = lw, lw.b

    def pair(self, o, ins, signed_src: bool = False):
        """(lo, hi) of a 64-bit operand; a 32-bit operand widened by signedness."""
        if isinstance(o, ptx.PImm):
            v = o.value & ((1 << 64) - 1)
            return Imm(v & 0xFFFFFFFF), Imm(v >> 32)
        if _wide_reg(o):
            return self.lw.reg(o.name + ":lo"), self.lw.reg(o.name + ":hi")
        lo = self.lw.value(o, ins)
        if not signed_src:
            return lo, Imm(0)
        hi = self.b.tmp()
        self.b.emit("shr.s", hi, lo, Imm(31))
        return lo, hi

    def dst(self, o, ins):
        if not _wide_reg(o):
            raise fail(ins, "a 64-bit result must go to a 64-bit register")
        return self.lw.reg(o.name + ":lo"), self.lw.reg(o.name + ":hi")

    def add(self, d, a, b, sub: bool = False) -> None:
        """d = a +/- b on pairs, the carry (borrow) from the low words: lo < a.lo
        (a.lo < b.lo)."""
        lo, c, h = self.b.tmp(), self.b.tmp(), self.b.tmp()
        self.b.emit("sub" if sub else "add", lo, a[0], b[0])
        if sub:
            self.b.emit("setlt.u", c, a[0], b[0])
            self.b.emit("sub", h, a[1], b[1])
            self.b.emit("sub", d[1], h, c)
        else:
            self.b.emit("setlt.u", c, lo, a[0])
            self.b.emit("add", h, a[1], b[1])
            self.b.emit("add", d[1], h, c)
        self.b.emit("mov", d[0], lo)

    def mul(self, d, a, b, signed: bool, wide: bool) -> None:
        """d = a * b: the full product of two 32-bit values (wide), or the low 64 bits of
        a 64 x 64 product."""
        lo, hi = self.b.tmp(), self.b.tmp()
        self.b.emit("mul", lo, a[0], b[0])
        emit_mulhi(self.b, signed and wide, hi, a[0], b[0])
        if not wide:
            x, y, s = self.b.tmp(), self.b.tmp(), self.b.tmp()
            self.b.emit("mul", x, a[0], b[1])
            self.b.emit("mul", y, a[1], b[0])
            self.b.emit("add", s, x, y)
            self.b.emit("add", d[1], hi, s)
        else:
            self.b.emit("mov", d[1], hi)
        self.b.emit("mov", d[0], lo)

    def shift(self, d, a, k: int, op: str) -> None:
        b = self.b
        k &= 63
        if k == 0:
            b.emit("mov", d[0], a[0])
            b.emit("mov", d[1], a[1])
            return
        lo, hi = b.tmp(), b.tmp()
        if op == "shl":
            if k >= 32:
                b.emit("shl", hi, a[0], Imm(k - 32))
                b.emit("mov", lo, Imm(0))
            else:
                t, u = b.tmp(), b.tmp()
                b.emit("shl", t, a[1], Imm(k))
                b.emit("shr.u", u, a[0], Imm(32 - k))
                b.emit("or", hi, t, u)
                b.emit("shl", lo, a[0], Imm(k))
        else:
            shr = "shr.s" if op == "shr.s" else "shr.u"
            if k >= 32:
                b.emit(shr, lo, a[1], Imm(k - 32))
                b.emit(shr, hi, a[1], Imm(31 if shr == "shr.s" else 32))
            else:
                t, u = b.tmp(), b.tmp()
                b.emit("shr.u", t, a[0], Imm(k))
                b.emit("shl", u, a[1], Imm(32 - k))
                b.emit("or", lo, t, u)
                b.emit(shr, hi, a[1], Imm(k))
        b.emit("mov", d[0], lo)
        b.emit("mov", d[1], hi)

    def compare(self, d, cmp: str, a, b, signed: bool) -> None:
        """d = a cmp b on pairs: the high words decide unless equal, then the low words
        (unsigned)."""
        em = self.b.emit
        if cmp in ("eq", "ne"):
            x, y = self.b.tmp(), self.b.tmp()
            em(_CMP_U[cmp], x, a[0], b[0])
            em(_CMP_U[cmp], y, a[1], b[1])
            em("and" if cmp == "eq" else "or", d, x, y)
            return
        high = _CMP_U[cmp].replace(".u", ".s") if signed and cmp not in (
            "lo", "ls", "hi", "hs") else _CMP_U[cmp]
        strict = high.replace("le", "lt").replace("ge", "gt")
        h, e, low, t = self.b.tmp(), self.b.tmp(), self.b.tmp(), self.b.tmp()
        em(strict, h, a[1], b[1])
        em("seteq", e, a[1], b[1])
        em(_CMP_U[cmp], low, a[0], b[0])
        em("and", t, e, low)
        em("or", d, h, t)


def lower_wide(lw, ins: ptx.PInstr) -> None:
    """Lower one 64-bit form (handles(ins) is true) on register pairs."""
    p = _Pairs(lw)
    op, parts, ops = ins.parts[0], ins.parts, ins.operands
    typ = parts[-1]
    signed = typ.startswith("s")
    if op in ("mul", "mad") and "wide" in parts:
        d = p.dst(ops[0], ins)
        a, b = p.pair(ops[1], ins), p.pair(ops[2], ins)
        if op == "mul":
            p.mul(d, a, b, signed, wide=True)
        else:
            t = (lw.b.tmp(), lw.b.tmp())
            p.mul(t, a, b, signed, wide=True)
            p.add(d, t, p.pair(ops[3], ins))
    elif op == "mul":
        p.mul(p.dst(ops[0], ins), p.pair(ops[1], ins), p.pair(ops[2], ins), signed, wide=False)
    elif op in ("add", "sub"):
        p.add(p.dst(ops[0], ins), p.pair(ops[1], ins), p.pair(ops[2], ins), sub=op == "sub")
    elif op in ("and", "or", "xor"):
        d, a, b = p.dst(ops[0], ins), p.pair(ops[1], ins), p.pair(ops[2], ins)
        for k in (0, 1):
            lw.b.emit(op, d[k], a[k], b[k])
    elif op == "mov" and isinstance(ops[0], ptx.PVec):   # {lo, hi} <- %rd
        a = p.pair(ops[1], ins)
        for k in (0, 1):
            lw.b.emit("mov", lw.dst(ops[0].items[k], ins), a[k])
    elif op == "mov" and isinstance(ops[1], ptx.PVec):   # %rd <- {lo, hi}
        d = p.dst(ops[0], ins)
        for k in (0, 1):
            lw.b.emit("mov", d[k], lw.value(ops[1].items[k], ins))
    elif op == "mov":
        d, a = p.dst(ops[0], ins), p.pair(ops[1], ins)
        lw.b.emit("mov", d[0], a[0])
        lw.b.emit("mov", d[1], a[1])
    elif op == "selp":
        d, a, b = p.dst(ops[0], ins), p.pair(ops[1], ins), p.pair(ops[2], ins)
        c = lw.value(ops[3], ins)
        for k in (0, 1):
            lw.b.emit("selp", d[k], a[k], b[k], c)
    elif op in ("shl", "shr"):
        kind = "shl" if op == "shl" else ("shr.s" if signed else "shr.u")
        p.shift(p.dst(ops[0], ins), p.pair(ops[1], ins), ops[2].value, kind)
    elif op == "cvt":
        to, frm = parts[-2], parts[-1]
        if to[1:] == "64":
            d = p.dst(ops[0], ins)
            # a 64-bit source register (cvt.s64.s32 %rd2, %rd1) converts only its low
            # bits: extending the whole pair would keep the high word unextended
            src = p.pair(ops[1], ins)[0] if _wide_reg(ops[1]) else None
            if frm[1:] in ("8", "16"):      # a narrow value extended by its type
                v = src if src is not None else lw.value(ops[1], ins)
                lo = _extend(lw, v, int(frm[1:]), frm[0] == "s", False)
                a = p.pair(lo, ins, signed_src=frm[0] == "s") if frm[0] == "s" else (lo, Imm(0))
            elif frm[1:] == "32" and src is not None:
                a = p.pair(src, ins, signed_src=frm == "s32")
            else:
                a = p.pair(ops[1], ins, signed_src=frm == "s32")
            lw.b.emit("mov", d[0], a[0])
            lw.b.emit("mov", d[1], a[1])
        elif to[1:] in ("8", "16"):         # 64 -> 8/16: the low bits, as PTX truncates
            into16 = ops[0].name.startswith("%rs")
            v = _extend(lw, p.pair(ops[1], ins)[0], int(to[1:]), to[0] == "s", into16)
            lw.b.emit("mov", lw.dst(ops[0], ins), v)
        else:                       # 64 -> 32: the low word (PTX truncates)
            lw.b.emit("mov", lw.dst(ops[0], ins), p.pair(ops[1], ins)[0])
    elif op in ("ld", "ldu"):
        _load(lw, p, ins)
    elif op == "st":
        space = lw.space_of(ins)
        base, off = lw.address(ops[0], ins)
        lo, hi = p.pair(ops[1], ins)
        # an 8-byte access: a GPU faults unless it is 8-aligned (Program.accesses)
        lw.b.emit(f"st.{space}", None, base, lo, offset=off, access=(8, 0))
        lw.b.emit(f"st.{space}", None, base, hi, offset=off + 4, access=(8, 4))
    elif op == "bfe":               # (a >> pos) & (2^len - 1), .s64 sign-extended
        pos, length = ops[2].value & 0xFF, ops[3].value & 0xFF
        d = p.dst(ops[0], ins)
        if length == 0 or pos + length > 64:
            raise fail(ins, f"{ins.opcode} with these fields is not supported")
        t = (lw.b.tmp(), lw.b.tmp())
        p.shift(t, p.pair(ops[1], ins), 64 - pos - length, "shl")
        p.shift(d, t, 64 - length, "shr.s" if signed else "shr.u")
    elif op == "setp":
        cmp = next((c for c in _CMP_U if c in parts), None)
        if cmp is None or len(parts) > 3 or isinstance(ops[0], ptx.PPair):
            raise fail(ins, f"{ins.opcode} on 64-bit values is not supported")
        p.compare(lw.dst(ops[0], ins), cmp, p.pair(ops[1], ins), p.pair(ops[2], ins), signed)
    else:
        raise fail(ins, f"the 64-bit form {ins.opcode} is not supported")


def _load(lw, p: _Pairs, ins) -> None:
    """A 64-bit load is two word loads (low word first, as the machine is little-endian);
    a 32-bit load into a 64-bit register extends by its type; a long long parameter is
    its two link-time words."""
    ops, typ = ins.operands, ins.parts[-1]
    d = p.dst(ops[0], ins)
    addr = ops[1]
    if "param" in ins.parts:
        k = param_index(lw, ins)
        if addr.offset:          # the high word of a long long parameter, alone
            lw.b.emit("mov", d[0], Sym(f"param:{k}:hi"))
            if typ[0] == "s":
                lw.b.emit("shr.s", d[1], d[0], Imm(31))
            else:
                lw.b.emit("mov", d[1], Imm(0))
            return
        if typ in _WIDE:
            lw.b.emit("mov", d[0], Sym(f"param:{k}"))
            lw.b.emit("mov", d[1], Sym(f"param:{k}:hi"))
            return
        # a narrower load into a 64-bit register extends to 64 bits by its type
        bits = int(typ[1:])
        if bits == 32:
            lw.b.emit("mov", d[0], Sym(f"param:{k}"))
        elif typ[0] == "s":
            t = lw.b.tmp()
            lw.b.emit("shl", t, Sym(f"param:{k}"), Imm(32 - bits))
            lw.b.emit("shr.s", d[0], t, Imm(32 - bits))
        else:
            lw.b.emit("and", d[0], Sym(f"param:{k}"), Imm((1 << bits) - 1))
        if typ[0] == "s":
            lw.b.emit("shr.s", d[1], d[0], Imm(31))
        else:
            lw.b.emit("mov", d[1], Imm(0))
        return
    if typ[1:] in ("8", "16"):   # the byte/halfword load into the low word (cuda.select)
        narrow_load(lw, ptx.PInstr(ins.opcode, [ptx.PReg(ops[0].name + ":lo"), addr],
                                   line=ins.line, text=ins.text, loc=ins.loc))
        if typ[0] == "s":
            lw.b.emit("shr.s", d[1], d[0], Imm(31))
        else:
            lw.b.emit("mov", d[1], Imm(0))
        return
    space = lw.space_of(ins)
    base, off = lw.address(addr, ins)
    lw.b.emit(f"ld.{space}", d[0], base, offset=off, access=(8, 0) if typ in _WIDE else None)
    if typ in _WIDE:
        lw.b.emit(f"ld.{space}", d[1], base, offset=off + 4, access=(8, 4))
    elif typ == "s32":
        lw.b.emit("shr.s", d[1], d[0], Imm(31))
    else:
        lw.b.emit("mov", d[1], Imm(0))


def _extend(lw, v, bits: int, signed: bool, into16: bool):
    """The low `bits` of v, sign- or zero-extended to 32 bits (kept zero-extended to 16
    when the result lives in a 16-bit register)."""
    b = lw.b
    t = b.tmp()
    if not signed:
        b.emit("and", t, v, Imm((1 << bits) - 1))
        return t
    u = b.tmp()
    b.emit("shl", u, v, Imm(32 - bits))
    b.emit("shr.s", t, u, Imm(32 - bits))
    if not into16:
        return t
    w = b.tmp()
    b.emit("and", w, t, Imm(0xFFFF))
    return w
