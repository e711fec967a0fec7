"""cuda.float32: PTX's `.f32` instructions (what clang emits for ordinary CUDA C on
`float`) to the ISA's binary32 operations (isa.ops.FLOAT_OPS, exact: isa.f32), and the
clear refusal of every float form that cannot be exact.

Mapped: add/sub/mul/fma/mad (.rn or no mode), div.rn, sqrt.rn, rcp.rn (1 / a), min/max,
abs/neg/copysign (sign-bit operations), setp in every ordered and unordered comparison
(the unordered ones as the negation of the complementary ordered one), cvt between f32
and s32/u32 (rn/rz/rm/rp to float, rni/rzi/rmi/rpi to integer; narrow integer types
saturate through s32) and f32 round-to-integral, `.ftz` (subnormal operands and results
flushed to the zero of their sign by integer operations around the op). selp, mov and
ld/st of f32 move bit patterns and need nothing here.

Refused (CompileError naming the PTX line): `.approx` forms (__expf, __sinf, __fdividef,
-use_fast_math), ex2/lg2/sin/cos/rsqrt/tanh (approximate only), arithmetic in rz/rm/rp
(__fadd_rz and friends), `.sat`, f16/bf16/f64 (double), and min/max.NaN.
"""

from __future__ import annotations

from qgpu.cuda import ptx
from qgpu.cuda.ir import CondBr, Goto
from qgpu.cuda.ptx import fail
from qgpu.isa import Imm, f32

_ROUND = {"rn": 0, "rz": 1, "rm": 2, "rp": 3}
_ROUND_INT = {"rni": 0, "rzi": 1, "rmi": 2, "rpi": 3}
# setp's unordered comparisons: (the ordered op, negate it?)
_SETP = {"eq": ("seteq", False), "ne": ("setne", False), "lt": ("setlt", False),
         "le": ("setle", False), "gt": ("setgt", False), "ge": ("setge", False),
         "equ": ("setne", True), "neu": ("seteq", True), "ltu": ("setge", True),
         "leu": ("setgt", True), "gtu": ("setle", True), "geu": ("setlt", True),
         "num": ("setnan", True), "nan": ("setnan", False)}
_APPROX_ONLY = {"ex2", "lg2", "sin", "cos", "rsqrt", "tanh"}
_INT_RANGE = {"s8": (-128, 127), "u8": (0, 255), "s16": (-32768, 32767), "u16": (0, 65535)}


def is_float(ins: ptx.PInstr) -> bool:
    """Whether this instruction computes on or converts floats (f32 or a refused kind)."""
    parts = ins.parts
    kinds = {"f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "tf32"}
    if parts[0] in ("ld", "ldu", "st", "mov", "selp", "shfl", "atom", "red") \
            and "f32" in parts:
        return parts[0] in ("atom", "red")  # the others move bits (atomics: refused)
    return bool(set(parts[1:]) & kinds) or parts[0] in _APPROX_ONLY | {"rcp", "copysign"}


def _refuse_kinds(ins: ptx.PInstr) -> None:
    parts = set(ins.parts[1:])
    if "approx" in parts or ins.parts[0] in _APPROX_ONLY:
        raise fail(ins, "approximate float instructions (__expf, __sinf, __fdividef, "
                        "rsqrtf, -use_fast_math) are not exact; qgpu runs float32 "
                        "bit-exactly: use expf-free code, '/' and sqrtf")
    if parts & {"f64"}:
        raise fail(ins, "double (f64) arithmetic is not supported: qgpu runs float32 only "
                        "(write 1.0f, not 1.0, and float functions)")
    if parts & {"f16", "f16x2", "bf16", "bf16x2", "tf32"}:
        raise fail(ins, "half and bfloat16 arithmetic is not supported (float32 only)")
    if "sat" in parts:
        raise fail(ins, f"{ins.opcode}: saturating float arithmetic is not supported")
    if "NaN" in parts or "xorsign" in parts:
        raise fail(ins, f"{ins.opcode} is not supported")


def _flush(lw, v, ftz: bool):
    """v, or v with a subnormal flushed to the zero of its sign (PTX .ftz)."""
    if not ftz:
        return v
    b = lw.b
    e, is_sub, sign, out = b.tmp(), b.tmp(), b.tmp(), b.tmp()
    b.emit("and", e, v, Imm(f32.INF))
    b.emit("seteq", is_sub, e, Imm(0))
    b.emit("and", sign, v, Imm(f32.SIGN))
    b.emit("selp", out, sign, v, is_sub)
    return out


def lower_float(lw, ins: ptx.PInstr) -> None:
    """Emit one float instruction through lw.b (select's dispatch for is_float)."""
    _refuse_kinds(ins)
    b, parts, ops = lw.b, ins.parts, ins.operands
    op = parts[0]
    ftz = "ftz" in parts
    if op in ("atom", "red"):
        _atomic_add(lw, ins)
        return
    if op == "cvt":
        _convert(lw, ins, ftz)
        return
    if op == "setp":
        _compare(lw, ins, ftz)
        return
    if op == "testp":
        raise fail(ins, f"{ins.opcode} is not supported")
    modes = [p for p in parts[1:] if p in _ROUND]
    if modes and modes != ["rn"]:
        raise fail(ins, f"{ins.opcode}: float arithmetic rounded toward {modes[0]} "
                        "(__fadd_rz and friends) is not supported; rn only")
    if op == "div" and "rn" not in parts:
        raise fail(ins, f"{ins.opcode}: only div.rn.f32 ('/' on floats) is exact")
    if op in ("sqrt", "rcp") and "rn" not in parts:
        raise fail(ins, f"{ins.opcode}: only the .rn form is exact")

    def src(k):
        return _flush(lw, lw.value(ops[k], ins), ftz)

    d = lw.dst(ops[0], ins)
    out = b.tmp() if ftz else d
    if op in ("add", "mul", "div", "min", "max"):
        b.emit(f"{op}.f32", out, src(1), src(2))
    elif op == "sub":
        nb = b.tmp()
        b.emit("xor", nb, src(2), Imm(f32.SIGN))
        b.emit("add.f32", out, src(1), nb)
    elif op in ("fma", "mad"):
        b.emit("fma.f32", out, src(1), src(2), src(3))
    elif op == "sqrt":
        b.emit("sqrt.f32", out, src(1))
    elif op == "rcp":
        b.emit("div.f32", out, Imm(0x3F800000), src(1))
    elif op == "abs":
        b.emit("and", out, src(1), Imm(0x7FFFFFFF))
    elif op == "neg":
        b.emit("xor", out, src(1), Imm(f32.SIGN))
    elif op == "copysign":   # copysign.f32 d, a, b: b's magnitude with a's sign
        mag, sign = b.tmp(), b.tmp()
        b.emit("and", mag, src(2), Imm(0x7FFFFFFF))
        b.emit("and", sign, src(1), Imm(f32.SIGN))
        b.emit("or", out, mag, sign)
    else:
        raise fail(ins, f"the float instruction {ins.opcode} is not supported")
    if ftz:
        b.emit("mov", d, _flush(lw, out, True))


def _compare(lw, ins, ftz: bool) -> None:
    b, parts, ops = lw.b, ins.parts, ins.operands
    how = parts[1]
    if how not in _SETP:
        raise fail(ins, f"float comparison {how} is not supported")
    name, negate = _SETP[how]
    comb = next((c for c in ("and", "or", "xor") if c in parts[2:-1]), None)
    pair = isinstance(ops[0], ptx.PPair)
    first = ops[0].first if pair else ops[0]
    x = _flush(lw, lw.value(ops[1], ins), ftz)
    y = _flush(lw, lw.value(ops[2], ins), ftz)
    r = b.tmp()
    b.emit(f"{name}.f32", r, x, y)
    if negate:
        r0, r = r, b.tmp()
        b.emit("xor", r, r0, Imm(1))
    p = lw.dst(first, ins)
    if comb:
        c = lw.value(ops[3], ins)
        b.emit(comb, p, r, c)
        if pair:
            nr = b.tmp()
            b.emit("xor", nr, r, Imm(1))
            b.emit(comb, lw.dst(ops[0].second, ins), nr, c)
        return
    b.emit("mov", p, r)
    if pair:
        b.emit("xor", lw.dst(ops[0].second, ins), r, Imm(1))


def _convert(lw, ins, ftz: bool) -> None:
    b, parts, ops = lw.b, ins.parts, ins.operands
    types = [p for p in parts[1:] if p[0] in "usbf" and p[1:].isdigit()]
    if len(types) != 2:
        raise fail(ins, f"conversion {ins.opcode} is not supported")
    to, frm = types
    d = lw.dst(ops[0], ins)
    a = lw.value(ops[1], ins)
    if to == "f32" and frm == "f32":   # cvt[.rni|...][.ftz].f32.f32
        mode = next((m for m in parts[1:] if m in _ROUND_INT), None)
        a = _flush(lw, a, ftz)
        if mode is None:
            b.emit("mov", d, a)
            return
        out = b.tmp() if ftz else d
        b.emit("cvt.f32.f32", out, a, Imm(_ROUND_INT[mode]))
        if ftz:
            b.emit("mov", d, _flush(lw, out, True))
        return
    if to == "f32":
        if frm not in ("s32", "u32"):
            raise fail(ins, f"conversion {ins.opcode}: only 32-bit integers convert to float "
                            "(widen the integer to int first)")
        mode = next((m for m in parts[1:] if m in _ROUND), "rn")
        b.emit(f"cvt.f32.{frm}", d, a, Imm(_ROUND[mode]))
        return
    if frm != "f32":
        raise fail(ins, f"conversion {ins.opcode} is not supported")
    mode = next((m for m in parts[1:] if m in _ROUND_INT), None)
    if mode is None:
        raise fail(ins, f"conversion {ins.opcode}: float to integer needs rni/rzi/rmi/rpi")
    a = _flush(lw, a, ftz)
    if to in ("s32", "u32"):
        b.emit(f"cvt.{to}.f32", d, a, Imm(_ROUND_INT[mode]))
        return
    if to not in _INT_RANGE:
        raise fail(ins, f"conversion {ins.opcode} is not supported (64-bit integers)")
    lo, hi = _INT_RANGE[to]          # PTX saturates to the destination's range
    s, c = b.tmp(), b.tmp()
    b.emit("cvt.s32.f32", s, a, Imm(_ROUND_INT[mode]))
    b.emit("max.s", c, s, Imm(lo & 0xFFFFFFFF))
    if isinstance(ops[0], ptx.PReg) and ops[0].name.startswith("%rs"):
        t = b.tmp()          # a 16-bit register holds its value zero-extended (cuda.narrow)
        b.emit("min.s", t, c, Imm(hi))
        b.emit("and", d, t, Imm(0xFFFF))
        return
    b.emit("min.s", d, c, Imm(hi))


def _atomic_add(lw, ins) -> None:
    """atom/red.add.f32 (atomicAdd on float): old = ld [a]; until atom.cas [a], old,
    add.f32(old, v) returns old. Atomics run lane by lane, so each lane's addition lands
    on the word the previous lane left, in ascending lane order (the interpreter's and
    the model's order; a GPU's order among lanes is unspecified)."""
    b, parts, ops = lw.b, ins.parts, ins.operands
    if "add" not in parts or (ins.parts[0] == "atom" and len(ops) != 3) or "ftz" in parts:
        raise fail(ins, f"{ins.opcode}: of the float atomics only atomicAdd is supported")
    space = lw.space_of(ins)
    d, rest = (b.tmp(), ops) if parts[0] == "red" else (lw.dst(ops[0], ins), ops[1:])
    base, off = lw.address(rest[0], ins)
    v = lw.value(rest[1], ins)
    addr = b.tmp()
    b.emit("add", addr, base, Imm(off))
    loop, done = b.new_block("fatom"), b.new_block("fatom_done")
    b.finish(Goto(loop.name))
    b.start(loop)
    old, new, retry = b.tmp(), b.tmp(), b.tmp()
    b.emit(f"ld.{space}", old, addr)
    b.emit("add.f32", new, old, v)
    b.emit(f"atom.{space}.cas", d, addr, old, new)
    b.emit("setne", retry, d, old)
    b.finish(CondBr(retry, loop.name, done.name))
    b.start(done)
