"""cuda.select: the per-instruction table of the lowering: one PTX data instruction (no
control flow) to native operations. Non-native forms (mul.hi, mad, neg, abs, not, funnel
shifts, bit-field extract/insert, sign extension, lane masks) expand here into short
native sequences; CUDA's 32-lane warp operations (shuffles, votes, __syncwarp) are
cuda.warp's; cuda.lower drives it and owns control flow.
"""

from __future__ import annotations

from qgpu.cuda import ptx, warp
from qgpu.cuda.divide import emit_divrem
from qgpu.cuda.float32 import is_float, lower_float
from qgpu.cuda.ir import CondBr, Goto, Sym
from qgpu.cuda.narrow import convert, narrow
from qgpu.cuda.ptx import fail
from qgpu.isa import Imm

_CMP = {"eq": "seteq", "ne": "setne", "lt": "setlt", "le": "setle", "gt": "setgt",
        "ge": "setge", "lo": "setlt.u", "ls": "setle.u", "hi": "setgt.u", "hs": "setge.u"}
_BITWISE = {"and": "and", "or": "or", "xor": "xor"}
_ATOMS = {"add", "and", "or", "xor", "exch", "cas", "min", "max"}
_NARROW = {"u8", "s8", "b8", "u16", "s16", "b16"}
_NOOPS = {"membar", "fence"}


def _type(ins: ptx.PInstr) -> str:
    return ins.parts[-1]


def _signed(ins: ptx.PInstr) -> bool:
    return _type(ins) == "s32"


def select(lw, ins: ptx.PInstr) -> None:
    """Emit native operations for one unguarded PTX data instruction through lw.b."""
    b = lw.b
    op, parts, ops = ins.parts[0], ins.parts, ins.operands

    def src(k):
        return lw.value(ops[k], ins)

    def dst():
        return lw.dst(ops[0], ins)

    if op in _NOOPS:
        return                      # the machine is sequentially consistent
    if op in ("bar", "barrier") and "warp" in parts:
        warp.group_barrier(lw)      # __syncwarp: CUDA's warp is the 32-thread group
        return
    if is_float(ins):
        lower_float(lw, ins)
        return
    if op in ("ld", "ldu") and "param" in parts:
        k = param_index(lw, ins)
        _param_load(lw, ins, Sym(f"param:{k}:hi" if ops[1].offset else f"param:{k}"))
        return
    if _type(ins) in _NARROW and op in ("ld", "ldu") and "param" not in parts:
        narrow_load(lw, ins)
        return
    if _type(ins) in _NARROW and op == "st" and "param" not in parts:
        _narrow_store(lw, ins)
        return
    if _type(ins) in _NARROW and op in ("ld", "ldu", "st", "atom", "red"):
        raise fail(ins, "8/16-bit atomics are not supported (CUDA has none for 8 bits; use "
                         "int or unsigned arrays)")
    if _type(ins) in _NARROW and op not in ("cvt", "prmt"):
        narrow(lw, ins)
        return
    if op in ("div", "rem"):
        emit_divrem(b, op, _signed(ins), dst(), src(1), src(2))
    elif op in ("add", "sub") or op in _BITWISE and _type(ins) != "pred":
        b.emit(_BITWISE.get(op, op), dst(), src(1), src(2))
    elif op in _BITWISE:            # predicates are 0/1 registers
        b.emit(op, dst(), src(1), src(2))
    elif op == "not":
        b.emit("xor", dst(), src(1), Imm(1 if _type(ins) == "pred" else 0xFFFFFFFF))
    elif op == "mul":
        if "lo" in parts or len(parts) == 2:
            b.emit("mul", dst(), src(1), src(2))
        elif "hi" in parts:
            emit_mulhi(b, _signed(ins), dst(), src(1), src(2))
        else:
            raise fail(ins, f"{ins.opcode} is not supported")
    elif op == "mad":
        t = b.tmp()
        if "lo" in parts:
            b.emit("mul", t, src(1), src(2))
        elif "hi" in parts and "cc" not in parts:
            emit_mulhi(b, _signed(ins), t, src(1), src(2))
        else:
            raise fail(ins, f"{ins.opcode} is not supported")
        b.emit("add", dst(), t, src(3))
    elif op == "neg":
        b.emit("sub", dst(), Imm(0), src(1))
    elif op == "abs":
        n = b.tmp()
        a = src(1)
        b.emit("sub", n, Imm(0), a)
        b.emit("max.s", dst(), a, n)
    elif op in ("min", "max"):
        b.emit(f"{op}.{'s' if _signed(ins) else 'u'}", dst(), src(1), src(2))
    elif op == "shr":
        b.emit("shr.s" if _signed(ins) else "shr.u", dst(), src(1), src(2))
    elif op in ("shl", "popc", "clz", "brev"):
        b.emit(op, dst(), *(src(k) for k in range(1, len(ops))))
    elif op == "setp":
        _setp(lw, ins)
    elif op == "selp":
        b.emit("selp", dst(), src(1), src(2), src(3))
    elif op == "slct":
        c = b.tmp()
        b.emit("setge.s", c, src(3), Imm(0))
        b.emit("selp", dst(), src(1), src(2), c)
    elif op == "mov":
        if isinstance(ops[1], ptx.PVec) or isinstance(ops[0], ptx.PVec):
            raise fail(ins, "vector moves (64-bit values) are not supported")
        value = src(1)
        if _type(ins) == "pred" and isinstance(value, Imm):
            value = Imm(int(value.value != 0))   # predicates are 0/1: `mov.pred %p, -1` is 1
        b.emit("mov", dst(), value)
    elif op == "cvta":
        b.emit("mov", dst(), src(1))    # global and shared addresses are used unchanged
    elif op == "cvt":
        convert(lw, ins)
    elif op in ("ld", "ldu", "st", "atom", "red"):
        _memory(lw, ins)
    elif op == "shfl":
        if isinstance(ops[0], ptx.PPair):
            raise fail(ins, "shfl with a predicate result is not supported")
        mode = next((m for m in ("up", "down", "bfly", "idx") if m in parts), None)
        lane, packed = src(2), src(3)
        if warp.native_shuffle(mode, lane, packed):
            b.emit(f"shfl.{mode}", dst(), src(1), lane, packed)
        else:
            mask = src(4) if len(ops) > 4 else Imm(warp.FULL)
            warp.shuffle(lw, ins, mode, dst(), src(1), lane, packed, mask)
    elif op == "vote":
        warp.vote(lw, ins, dst(), src(1))
    elif op == "activemask":
        warp.ballot(lw, dst(), Imm(1))
    elif op == "match":
        d, pred = ops[0], None
        if isinstance(d, ptx.PPair):
            d, pred = d.first, lw.dst(d.second, ins)
        warp.match(lw, ins, lw.dst(d, ins), pred, src(1), src(2))
    elif op == "bfind":
        _bfind(lw, ins)
    elif op == "bfe":
        _bfe(lw, ins)
    elif op == "bfi":
        _bfi(lw, ins)
    elif op == "shf":
        _funnel(lw, ins)
    elif op == "prmt":
        _permute(lw, ins)
    else:
        raise fail(ins, f"the PTX instruction {ins.opcode} is not supported")


def emit_mulhi(b, signed: bool, d, x, y) -> None:
    """d = the high 32 bits of the 64-bit product x * y (PTX mul.hi), in 16 native
    operations on 16-bit halves (Hacker's Delight, mulhu/mulhs): x = x1 * 2^16 + x0 with
    x0 = x & 0xffff and x1 = x >> 16, logical when unsigned and arithmetic when signed (so
    x1 is a signed half and no sign correction follows); the same for y. Every partial
    product and partial sum fits 32 bits (signed ones as signed values), so `mul`'s low
    product is exact:

        w0 = x0 * y0                      t = x1 * y0 + (w0 >>u 16)
        w1 = x0 * y1 + (t & 0xffff)       d = x1 * y1 + (t >> 16) + (w1 >> 16)

    A constant y (division by constants) folds its halves, leaving 14 operations; halves of
    the same x in several products are shared by the optimizer's CSE."""
    shr = "shr.s" if signed else "shr.u"
    x0, x1, y0, y1, w0, w0h, t, p, tl, th, q, w1, w1h, h, s = (b.tmp() for _ in range(15))
    b.emit("and", x0, x, Imm(0xFFFF))
    b.emit(shr, x1, x, Imm(16))
    b.emit("and", y0, y, Imm(0xFFFF))
    b.emit(shr, y1, y, Imm(16))
    b.emit("mul", w0, x0, y0)
    b.emit("shr.u", w0h, w0, Imm(16))
    b.emit("mul", p, x1, y0)
    b.emit("add", t, p, w0h)
    b.emit("and", tl, t, Imm(0xFFFF))
    b.emit(shr, th, t, Imm(16))
    b.emit("mul", q, x0, y1)
    b.emit("add", w1, q, tl)
    b.emit(shr, w1h, w1, Imm(16))
    b.emit("mul", h, x1, y1)
    b.emit("add", s, h, th)
    b.emit("add", d, s, w1h)


def _setp(lw, ins) -> None:
    b, parts, ops = lw.b, ins.parts, ins.operands
    cmp = _CMP.get(parts[1])
    if cmp is None:
        raise fail(ins, f"comparison {parts[1]} is not supported")
    if not cmp.endswith(".u") and cmp not in ("seteq", "setne"):
        cmp += ".s" if _type(ins) == "s32" else ".u"
    first = ops[0].first if isinstance(ops[0], ptx.PPair) else ops[0]
    comb = next((c for c in ("and", "or", "xor") if c in parts[2:-1]), None)
    p = lw.dst(first, ins)
    r = b.tmp() if comb or isinstance(ops[0], ptx.PPair) else p
    b.emit(cmp, r, lw.value(ops[1], ins), lw.value(ops[2], ins))
    if comb:
        c = lw.value(ops[3], ins)
        b.emit(comb, p, r, c)
        if isinstance(ops[0], ptx.PPair):     # q = !r combined with c
            nr = b.tmp()
            b.emit("xor", nr, r, Imm(1))
            b.emit(comb, lw.dst(ops[0].second, ins), nr, c)
    elif isinstance(ops[0], ptx.PPair):
        b.emit("mov", p, r)
        b.emit("xor", lw.dst(ops[0].second, ins), r, Imm(1))


def param_index(lw, ins: ptx.PInstr) -> int:
    """The parameter an ld.param reads: its whole value, or (offset 4) the high word of a
    long long parameter; anything else (a struct or array parameter) is refused."""
    addr = ins.operands[1]
    if not isinstance(addr, ptx.PAddr) or not isinstance(addr.base, ptx.PSym) \
            or addr.base.name not in lw.params or addr.offset not in (0, 4):
        raise fail(ins, "unsupported parameter access (struct or array parameter?)")
    k = lw.params[addr.base.name]
    if addr.offset and lw.param_bits.get(k, 32) != 64:
        raise fail(ins, "unsupported parameter access (struct or array parameter?)")
    return k


def _param_load(lw, ins, value: Sym) -> None:
    """ld.param of a scalar: the launch binds its bits (a char's sign-extended); an 8- or
    16-bit load extends them as PTX does, into a 16-bit register (kept zero-extended) or
    a 32-bit one."""
    b, typ = lw.b, _type(ins)
    d = lw.dst(ins.operands[0], ins)
    bits = {"u8": 8, "s8": 8, "b8": 8, "u16": 16, "s16": 16, "b16": 16}.get(typ)
    if bits is None:
        b.emit("mov", d, value)
        return
    into16 = ins.operands[0].name.startswith("%rs")
    t = b.tmp()
    if typ.startswith("s") and (bits == 8 or not into16):
        b.emit("shl", t, value, Imm(32 - bits))
        if into16:
            u = b.tmp()
            b.emit("shr.s", u, t, Imm(32 - bits))
            b.emit("and", d, u, Imm(0xFFFF))
        else:
            b.emit("shr.s", d, t, Imm(32 - bits))
        return
    b.emit("and", d, value, Imm((1 << bits) - 1))


def _memory(lw, ins) -> None:
    b, parts, ops = lw.b, ins.parts, ins.operands
    if any(p.startswith("v") and p[1:].isdigit() for p in parts):
        raise fail(ins, "vector memory access is not supported")
    space = lw.space_of(ins)
    op = parts[0]
    if op in ("ld", "ldu"):
        base, off = lw.address(ops[1], ins)
        b.emit(f"ld.{space}", lw.dst(ops[0], ins), base, offset=off)
        return
    if op == "st":
        base, off = lw.address(ops[0], ins)
        b.emit(f"st.{space}", None, base, lw.value(ops[1], ins), offset=off)
        return
    kind = next((p for p in parts[1:] if p in _ATOMS), None)
    if kind is None:
        what = next((p for p in parts[1:] if p in ("inc", "dec")), ins.opcode)
        raise fail(ins, f"atomic {what} is not supported (atomicInc/atomicDec from qgpu's "
                         "header are CAS loops)")
    if kind in ("min", "max"):
        kind += ".s" if _type(ins) == "s32" else ".u"
    if op == "red":
        d, rest = b.tmp(), ops
    else:
        d, rest = lw.dst(ops[0], ins), ops[1:]
    base, off = lw.address(rest[0], ins)
    vals = [lw.value(o, ins) for o in rest[1:]]
    b.emit(f"atom.{space}.{kind}", d, base, *vals, offset=off)


def _narrow_address(lw, ins, operand) -> tuple[str, int, object]:
    """(space, bits, the full byte address) of an 8/16-bit load or store: its low bits
    pick the bytes within the aligned word."""
    if any(p.startswith("v") and p[1:].isdigit() for p in ins.parts):
        raise fail(ins, "vector memory access is not supported")
    base, off = lw.address(operand, ins)
    addr = lw.b.tmp()
    lw.b.emit("add", addr, base, Imm(off))
    return lw.space_of(ins), int(_type(ins)[1:]), addr


def narrow_load(lw, ins) -> None:
    """ld.{u,s}{8,16} (clang narrows `a[i] & 255` or `a[i] >> 16` to these): load the
    aligned word, shift the wanted bytes down, zero- or sign-extend. The address is
    computed in full, since its low bits pick the bytes. A 16-bit load keeps bit 0 in
    the word address, so an odd address faults as misaligned on both engines, as a
    16-bit store does (and as a GPU does)."""
    b, t = lw.b, _type(ins)
    space, bits, addr = _narrow_address(lw, ins, ins.operands[1])
    word, aligned, low, shift, down = (b.tmp() for _ in range(5))
    b.emit("and", aligned, addr, Imm(0xFFFFFFFC if bits == 8 else 0xFFFFFFFD))
    b.emit(f"ld.{space}", word, aligned, access=(bits // 8, 0))
    b.emit("and", low, addr, Imm(3))
    b.emit("shl", shift, low, Imm(3))
    b.emit("shr.u", down, word, shift)
    dreg = ins.operands[0]
    d = lw.dst(dreg, ins)
    if t.startswith("s"):
        up, ext = b.tmp(), b.tmp()
        b.emit("shl", up, down, Imm(32 - bits))
        narrow_reg = isinstance(dreg, ptx.PReg) and dreg.name.startswith("%rs")
        b.emit("shr.s", ext if narrow_reg else d, up, Imm(32 - bits))
        if narrow_reg:
            b.emit("and", d, ext, Imm(0xFFFF))
    else:
        b.emit("and", d, down, Imm((1 << bits) - 1))


def _narrow_store(lw, ins) -> None:
    """st.{u,s,b}{8,16}: the machine's memory is words, so the store replaces its bytes
    in the aligned word with a compare-and-swap loop, old = ld [w]; new = (old & ~mask)
    | (v << shift); until atom.cas [w], old, new returns old. Atomics run lane by lane
    (docs/isa.md), so lanes that write different bytes of one word in the same
    instruction lose none of them (a lane whose CAS finds the word changed by a lower
    lane loads it again), and lanes that write the same bytes leave the highest lane's
    value, as a word store does. A 16-bit store at an odd address loads from a
    misaligned address and faults, as PTX's alignment rule says it must."""
    b = lw.b
    space, bits, addr = _narrow_address(lw, ins, ins.operands[0])
    value = lw.value(ins.operands[1], ins)
    word, low, shift, mask, keep, small, val = (b.tmp() for _ in range(7))
    # 16 bits: bit 0 stays in the word address, so an odd address faults as misaligned
    b.emit("and", word, addr, Imm(0xFFFFFFFC if bits == 8 else 0xFFFFFFFD))
    b.emit("and", low, addr, Imm(3 if bits == 8 else 2))
    b.emit("shl", shift, low, Imm(3))
    b.emit("shl", mask, Imm((1 << bits) - 1), shift)
    b.emit("xor", keep, mask, Imm(0xFFFFFFFF))
    b.emit("and", small, value, Imm((1 << bits) - 1))
    b.emit("shl", val, small, shift)
    loop = b.new_block("narrow_store")
    done = b.new_block("narrow_stored")
    b.finish(Goto(loop.name))
    b.start(loop)
    old, kept, new, got, retry = (b.tmp() for _ in range(5))
    b.emit(f"ld.{space}", old, word, access=(bits // 8, 0))
    b.emit("and", kept, old, keep)
    b.emit("or", new, kept, val)
    b.emit(f"atom.{space}.cas", got, word, old, new, access=(bits // 8, 0))
    b.emit("setne", retry, got, old)
    b.finish(CondBr(retry, loop.name, done.name))
    b.start(done)


def _bfind(lw, ins) -> None:
    b = lw.b
    a = lw.value(ins.operands[1], ins)
    d = lw.dst(ins.operands[0], ins)
    if _signed(ins):            # highest bit that differs from the sign bit
        s, x = b.tmp(), b.tmp()
        b.emit("shr.s", s, a, Imm(31))
        b.emit("xor", x, a, s)
        a = x
    z = b.tmp()
    b.emit("clz", z, a)
    if "shiftamt" in ins.parts:     # clz, or ~0 when no bit is found
        zero, mask = b.tmp(), b.tmp()
        b.emit("seteq", zero, z, Imm(32))
        b.emit("sub", mask, Imm(0), zero)
        b.emit("or", d, z, mask)
    else:
        b.emit("sub", d, Imm(31), z)


def _const(lw, ins, k: int, what: str) -> int:
    o = ins.operands[k]
    if not isinstance(o, ptx.PImm):
        raise fail(ins, f"{ins.opcode} with a run-time {what} is not supported")
    return o.value & 0xFF


def _bfe(lw, ins) -> None:
    b = lw.b
    pos, length = _const(lw, ins, 2, "position"), _const(lw, ins, 3, "length")
    a, d = lw.value(ins.operands[1], ins), lw.dst(ins.operands[0], ins)
    if length == 0:
        b.emit("mov", d, Imm(0))
        return
    pos, length = min(pos, 32), min(length, 32)
    if _signed(ins):            # sign comes from bit min(pos + len, 32) - 1
        t = b.tmp()
        top = min(pos + length, 32)
        b.emit("shl", t, a, Imm(32 - top))
        b.emit("shr.s", d, t, Imm(32 - top + pos if top - pos < 32 else 0))
        return
    t = b.tmp()
    b.emit("shr.u", t, a, Imm(pos))
    b.emit("and", d, t, Imm((1 << min(length, 32 - pos)) - 1 if pos < 32 else 0))


def _bfi(lw, ins) -> None:
    b = lw.b
    pos, length = _const(lw, ins, 3, "position"), _const(lw, ins, 4, "length")
    f, base = lw.value(ins.operands[1], ins), lw.value(ins.operands[2], ins)
    d = lw.dst(ins.operands[0], ins)
    if length == 0 or pos >= 32:
        b.emit("mov", d, base)
        return
    mask = (((1 << min(length, 32 - pos)) - 1) << pos) & 0xFFFFFFFF
    shifted, part, kept = b.tmp(), b.tmp(), b.tmp()
    b.emit("shl", shifted, f, Imm(pos))
    b.emit("and", part, shifted, Imm(mask))
    b.emit("and", kept, base, Imm(~mask & 0xFFFFFFFF))
    b.emit("or", d, part, kept)


def _funnel(lw, ins) -> None:
    """shf.l: high word of (b:a) << n; shf.r: low word of (b:a) >> n."""
    b, parts = lw.b, ins.parts
    lo, hi = lw.value(ins.operands[1], ins), lw.value(ins.operands[2], ins)
    d = lw.dst(ins.operands[0], ins)
    c = lw.value(ins.operands[3], ins)
    n = b.tmp()
    if "clamp" in parts:
        b.emit("min.u", n, c, Imm(32))
    else:
        b.emit("and", n, c, Imm(31))
    rest, x, y = b.tmp(), b.tmp(), b.tmp()
    b.emit("sub", rest, Imm(32), n)      # shifts by 32 give 0, as the funnel needs
    if "l" in parts:
        b.emit("shl", x, hi, n)
        b.emit("shr.u", y, lo, rest)
    else:
        b.emit("shr.u", x, lo, n)
        b.emit("shl", y, hi, rest)
    b.emit("or", d, x, y)


def _permute(lw, ins) -> None:
    """prmt.b32 d, a, b, c with a constant selector: result byte i is byte c[4i+2:4i] of
    {b, a}; bytes that move by the same distance from the same word share one shift and
    mask."""
    b = lw.b
    if len(ins.parts) != 2:
        raise fail(ins, f"{ins.opcode} (a special permute mode) is not supported")
    sel = ins.operands[3]
    if not isinstance(sel, ptx.PImm):
        raise fail(ins, "prmt with a run-time selector is not supported")
    words = [lw.value(ins.operands[1], ins), lw.value(ins.operands[2], ins)]
    groups: dict[tuple[int, int], int] = {}
    for i in range(4):
        nib = (sel.value >> (4 * i)) & 0xF
        if nib & 8:
            raise fail(ins, "prmt with sign replication is not supported")
        src = 0 if nib < 4 or words[0] == words[1] else 1
        key = (src, 8 * (i - (nib & 3)))
        groups[key] = groups.get(key, 0) | (0xFF << (8 * i))
    terms = []
    for (src, shift), mask in groups.items():
        x = words[src]
        if shift:
            t = b.tmp()
            b.emit("shl" if shift > 0 else "shr.u", t, x, Imm(abs(shift)))
            x = t
        if mask != 0xFFFFFFFF:
            t = b.tmp()
            b.emit("and", t, x, Imm(mask))
            x = t
        terms.append(x)
    while len(terms) > 1:
        x, y = terms.pop(0), terms.pop(0)
        t = b.tmp() if terms else lw.dst(ins.operands[0], ins)
        b.emit("or", t, x, y)
        terms.append(t)
    if len(groups) == 1:
        b.emit("mov", lw.dst(ins.operands[0], ins), terms[0])
