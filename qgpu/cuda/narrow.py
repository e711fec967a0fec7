"""cuda.narrow: 16-bit (and 8-bit) register arithmetic on the 32-bit machine.

LLVM narrows some int arithmetic to 16 bits when it can prove the values small (for
example `(threadIdx.x + 5) % blockDim.x` becomes rem.u16). A 16-bit PTX register lives
in a 32-bit machine register in canonical form, zero-extended (upper half 0). An
operation sign-extends its sources when its signedness matters, computes in 32 bits
(reusing cuda.select), and masks the result back to 16 bits when it can have left the
canonical form. 8/16-bit loads and stores are cuda.select's (word accesses of the aligned
word; 8/16-bit atomics are refused there).
"""

from __future__ import annotations

from qgpu.cuda import ptx
from qgpu.cuda.ptx import fail
from qgpu.isa import Imm

_NO_MASK_UNSIGNED = {"and", "or", "xor", "selp", "mov", "shr", "min", "max", "div", "rem",
                     "popc", "clz"}
_SIGN_MATTERS = {"shr", "min", "max", "div", "rem", "setp", "mul", "cvt", "abs", "neg"}


def _bits(t: str) -> int:
    return int(t[1:]) if t[1:].isdigit() else 32


def extend(lw, ins, o, bits: int, signed: bool):
    """Operand o (a canonical narrow value) as a 32-bit value, sign- or zero-extended."""
    v = lw.value(o, ins)
    mask = (1 << bits) - 1
    if isinstance(v, Imm):
        x = v.value & mask
        return Imm(x - (1 << bits) if signed and x >> (bits - 1) else x)
    if not signed:
        return v
    b = lw.b
    t, u = b.tmp(), b.tmp()
    b.emit("shl", t, v, Imm(32 - bits))
    b.emit("shr.s", u, t, Imm(32 - bits))
    return u


def narrow(lw, ins: ptx.PInstr) -> None:
    """Lower one 8/16-bit arithmetic instruction (not cvt, not memory)."""
    b = lw.b
    op, parts, ops = ins.parts[0], ins.parts, ins.operands
    t = parts[-1]
    bits = _bits(t)
    signed = t.startswith("s") and op in _SIGN_MATTERS
    wide = "wide" in parts
    if op in ("mul", "mad") and (wide or "hi" in parts):
        # the 2*bits-bit product of two extended narrow values fits 32 bits exactly
        if bits > 16:
            raise fail(ins, f"{ins.opcode} is not supported")
        sgn = t.startswith("s")
        a = extend(lw, ins, ops[1], bits, sgn)
        c = extend(lw, ins, ops[2], bits, sgn)
        prod = b.tmp()
        b.emit("mul", prod, a, c)
        dst = lw.dst(ops[0], ins)
        if wide:                                    # 2*bits-bit result (+ c for mad)
            if op == "mad":
                b.emit("add", dst, prod, lw.value(ops[3], ins))
            else:
                b.emit("mov", dst, prod)
            return
        hi = b.tmp()
        b.emit("shr.s" if sgn else "shr.u", hi, prod, Imm(bits))
        if op == "mad":                             # mad.hi: high half + c, bits wide
            h2 = b.tmp()
            b.emit("add", h2, hi, lw.value(ops[3], ins))
            hi = h2
        b.emit("and", dst, hi, Imm((1 << bits) - 1))
        return
    shift_amount = 2 if op in ("shl", "shr") else None
    srcs = []
    for k, o in enumerate(ops[1:], 1):
        is_pred = isinstance(o, ptx.PReg) and o.name.startswith("%p")
        if k == shift_amount or is_pred or (op == "selp" and k == 3):
            srcs.append(lw.value(o, ins))
        else:
            srcs.append(extend(lw, ins, o, bits, signed))
    wide_type = ("s32" if signed else "u32") if t[0] in "su" else "b32"
    wide_op = ".".join(parts[:-1] + [wide_type])
    if op == "setp":
        lw.select(ptx.PInstr(wide_op, [ops[0]] + srcs, line=ins.line, text=ins.text,
                             loc=ins.loc))
        return
    dst = lw.dst(ops[0], ins)
    needs_mask = signed or op not in _NO_MASK_UNSIGNED
    if op == "mov" and isinstance(srcs[0], Imm):
        needs_mask = False
        srcs = [Imm(srcs[0].value & ((1 << bits) - 1))]
    tmp = b.tmp() if needs_mask else dst
    lw.select(ptx.PInstr(wide_op, [tmp] + srcs, line=ins.line, text=ins.text, loc=ins.loc))
    if needs_mask:
        b.emit("and", dst, tmp, Imm((1 << bits) - 1))


def convert(lw, ins: ptx.PInstr) -> None:
    """cvt.<to>.<from>: extend from the source width by the source's signedness, then
    truncate to the destination width (sign-extended if the destination is signed and
    its register is 32-bit; canonical zero-extended in a 16-bit register)."""
    b = lw.b
    types = [p for p in ins.parts[1:] if p[0] in "usb" and p[1:].isdigit()]
    if len(types) != 2:
        raise fail(ins, f"conversion {ins.opcode} is not supported")
    to, frm = types
    dreg, sreg = ins.operands[0], ins.operands[1]
    reg_bits = 16 if isinstance(dreg, ptx.PReg) and dreg.name.startswith("%rs") else 32
    fb, tb = _bits(frm), _bits(to)
    v = extend(lw, ins, sreg, fb, frm.startswith("s"))
    canonical = isinstance(sreg, ptx.PReg) and sreg.name.startswith("%rs") and fb == 16
    if fb < 32 and not frm.startswith("s") and not canonical and not isinstance(v, Imm):
        t = b.tmp()
        b.emit("and", t, v, Imm((1 << fb) - 1))
        v = t
    d = lw.dst(dreg, ins)
    if tb >= 32:
        b.emit("mov", d, v)
        return
    if to.startswith("s") and tb < reg_bits:
        t, u = b.tmp(), b.tmp()
        b.emit("shl", t, v, Imm(32 - tb))
        if reg_bits == 32:
            b.emit("shr.s", d, t, Imm(32 - tb))
            return
        b.emit("shr.s", u, t, Imm(32 - tb))
        v = u
    b.emit("and", d, v, Imm((1 << reg_bits) - 1 if reg_bits < 32 else (1 << tb) - 1))
