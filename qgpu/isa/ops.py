"""isa.ops: the native instruction set: every operation's mnemonic, operand shape and
exact 32-bit semantics (PTX's, wrap-around). The interpreter executes these functions;
docs/isa.md's operation table is generated from OPS.

Kinds:
  alu     dst <- f(srcs)                   (pure function of uint32 operands)
  sreg    dst <- a special register        (tid, ntid, ctaid, nctaid, laneid, warpid)
  load    dst <- mem[a + offset]
  store   mem[a + offset] <- b
          (spaces: global, shared per CTA, local per thread: the front end's register
          spills; local ops have no protocol token, the model machine has no local memory)
  atomic  dst <- mem[a + offset]; mem[...] <- f(old, b[, c])
  shfl    dst <- a of another lane (PTX shfl.sync semantics, b = lane/delta, c = packed)
  vote    dst <- ballot of b != 0 over the active lanes
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from qgpu.isa import f32
from qgpu.isa.limits import s32, u32


@dataclass(frozen=True)
class OpSpec:
    mnemonic: str
    kind: str
    n_srcs: int               # value operands (address base counts as one)
    has_dst: bool
    doc: str
    fn: Callable[..., int] | None = None   # alu: f(*srcs); atomic: f(old, b[, c])
    space: str | None = None               # load/store/atomic: "global" | "shared" | "local"
    mode: str | None = None                # shfl mode, sreg name


def _shl(a, b):
    return u32(a << b) if b < 32 else 0


def _shr_u(a, b):
    return a >> b if b < 32 else 0


def _shr_s(a, b):
    return u32(s32(a) >> min(b, 31))


def _clz(a):
    return 32 - a.bit_length()


def _brev(a):
    return int(f"{a:032b}"[::-1], 2)


_ALU2: dict[str, tuple[Callable[[int, int], int], str]] = {
    "add": (lambda a, b: u32(a + b), "a + b"),
    "sub": (lambda a, b: u32(a - b), "a - b"),
    "mul": (lambda a, b: u32(a * b), "low 32 bits of a * b"),
    "and": (lambda a, b: a & b, "a & b"),
    "or": (lambda a, b: a | b, "a | b"),
    "xor": (lambda a, b: a ^ b, "a ^ b"),
    "shl": (_shl, "a << b; b >= 32 gives 0 (PTX clamps the amount)"),
    "shr.u": (_shr_u, "logical a >> b; b >= 32 gives 0"),
    "shr.s": (_shr_s, "arithmetic a >> b; b >= 32 gives the sign"),
    "min.s": (lambda a, b: u32(min(s32(a), s32(b))), "signed minimum"),
    "min.u": (lambda a, b: min(a, b), "unsigned minimum"),
    "max.s": (lambda a, b: u32(max(s32(a), s32(b))), "signed maximum"),
    "max.u": (lambda a, b: max(a, b), "unsigned maximum"),
    "seteq": (lambda a, b: int(a == b), "1 if a == b else 0"),
    "setne": (lambda a, b: int(a != b), "1 if a != b else 0"),
    "setlt.s": (lambda a, b: int(s32(a) < s32(b)), "1 if a < b (signed)"),
    "setle.s": (lambda a, b: int(s32(a) <= s32(b)), "1 if a <= b (signed)"),
    "setgt.s": (lambda a, b: int(s32(a) > s32(b)), "1 if a > b (signed)"),
    "setge.s": (lambda a, b: int(s32(a) >= s32(b)), "1 if a >= b (signed)"),
    "setlt.u": (lambda a, b: int(a < b), "1 if a < b (unsigned)"),
    "setle.u": (lambda a, b: int(a <= b), "1 if a <= b (unsigned)"),
    "setgt.u": (lambda a, b: int(a > b), "1 if a > b (unsigned)"),
    "setge.u": (lambda a, b: int(a >= b), "1 if a >= b (unsigned)"),
}

_ALU1: dict[str, tuple[Callable[[int], int], str]] = {
    "mov": (lambda a: a, "a"),
    "popc": (lambda a: a.bit_count(), "number of 1 bits of a"),
    "clz": (_clz, "leading zero bits of a (32 for 0)"),
    "brev": (_brev, "a with its 32 bits reversed"),
}

ATOMIC_FNS: dict[str, tuple[Callable[..., int], str]] = {
    "add": (lambda old, b: u32(old + b), "old + b"),
    "min.s": (lambda old, b: u32(min(s32(old), s32(b))), "signed min(old, b)"),
    "min.u": (lambda old, b: min(old, b), "unsigned min(old, b)"),
    "max.s": (lambda old, b: u32(max(s32(old), s32(b))), "signed max(old, b)"),
    "max.u": (lambda old, b: max(old, b), "unsigned max(old, b)"),
    "and": (lambda old, b: old & b, "old & b"),
    "or": (lambda old, b: old | b, "old | b"),
    "xor": (lambda old, b: old ^ b, "old ^ b"),
    "exch": (lambda old, b: b, "b"),
    "cas": (lambda old, b, c: c if old == b else old, "c if old == b else old"),
}

# binary32 on bit patterns, exact (isa.f32); cvt's b is the rounding mode 0..3: rn, rz,
# rm, rp (an immediate; the front end writes PTX's cvt.rni/rzi/rmi/rpi and cvt.rn/rz/rm/rp)
def _mode(b: int) -> str:
    return f32.MODES[b & 3]


def _compare(a: int, b: int, how: str) -> int:
    return f32.compare(a, b, how)


FLOAT_OPS: dict[str, tuple[int, Callable[..., int], str]] = {
    "add.f32": (2, f32.add, "a + b, binary32 rounded to nearest even (add.rn.f32)"),
    "mul.f32": (2, f32.mul, "a * b, binary32 rounded to nearest even (mul.rn.f32)"),
    "fma.f32": (3, f32.fma, "a * b + c rounded once (fma.rn.f32)"),
    "div.f32": (2, f32.div, "a / b correctly rounded (div.rn.f32)"),
    "sqrt.f32": (1, f32.sqrt, "square root correctly rounded (sqrt.rn.f32)"),
    "min.f32": (2, f32.fmin, "binary32 minimum; a NaN operand gives the other (PTX min.f32)"),
    "max.f32": (2, f32.fmax, "binary32 maximum; a NaN operand gives the other (PTX max.f32)"),
    **{f"set{how}.f32": (2, partial(_compare, how=how),
                         f"1 if a {how} b (binary32, ordered: 0 on NaN)")
       for how in f32.COMPARES},
    "setnan.f32": (2, lambda a, b: f32.compare(a, b, "nan"), "1 if a or b is NaN"),
    "cvt.f32.s32": (2, lambda a, b: f32.from_int(a, True, _mode(b)),
                    "signed a to binary32, rounded in mode b"),
    "cvt.f32.u32": (2, lambda a, b: f32.from_int(a, False, _mode(b)),
                    "unsigned a to binary32, rounded in mode b"),
    "cvt.s32.f32": (2, lambda a, b: f32.to_int(a, True, _mode(b)),
                    "binary32 a to a signed integer in mode b, saturated; NaN gives 0"),
    "cvt.u32.f32": (2, lambda a, b: f32.to_int(a, False, _mode(b)),
                    "binary32 a to an unsigned integer in mode b, saturated; NaN gives 0"),
    "cvt.f32.f32": (2, lambda a, b: f32.round_integral(a, _mode(b)),
                    "binary32 a rounded to an integral value in mode b"),
}

SPECIAL_REGS: dict[str, str] = {
    "tid": "thread index in the CTA (threadIdx.x)",
    "ntid": "threads per CTA (blockDim.x)",
    "ctaid": "CTA index (blockIdx.x)",
    "nctaid": "CTAs in the launch (gridDim.x)",
    "laneid": "lane index in the warp, 0..3",
    "warpid": "warp index in the CTA",
}

SHFL_MODES = ("up", "down", "bfly", "idx")
SPACES = ("global", "shared")          # the spaces with atomics (and protocol tokens)
LOCAL = "local"                        # per-thread words: ld.local / st.local only


def _build() -> dict[str, OpSpec]:
    ops: dict[str, OpSpec] = {}
    for name, (fn, doc) in _ALU2.items():
        ops[name] = OpSpec(name, "alu", 2, True, doc, fn)
    for name, (fn, doc) in _ALU1.items():
        ops[name] = OpSpec(name, "alu", 1, True, doc, fn)
    ops["selp"] = OpSpec("selp", "alu", 3, True, "a if c != 0 else b  (PTX operand order a, b, c)",
                         lambda a, b, c: a if c != 0 else b)
    for name, (n, fn, doc) in FLOAT_OPS.items():
        ops[name] = OpSpec(name, "alu", n, True, doc, fn)
    for name, doc in SPECIAL_REGS.items():
        ops[name] = OpSpec(name, "sreg", 0, True, doc, mode=name)
    for sp in SPACES:
        ops[f"ld.{sp}"] = OpSpec(f"ld.{sp}", "load", 1, True, f"{sp} word at a + offset",
                                 space=sp)
        ops[f"st.{sp}"] = OpSpec(f"st.{sp}", "store", 2, False,
                                 f"{sp} word at a + offset <- b", space=sp)
        for aname, (fn, doc) in ATOMIC_FNS.items():
            m = f"atom.{sp}.{aname}"
            n = 3 if aname == "cas" else 2
            ops[m] = OpSpec(m, "atomic", n, True, f"dst <- old; word <- {doc}", fn, space=sp,
                            mode=aname)
    ops[f"ld.{LOCAL}"] = OpSpec(f"ld.{LOCAL}", "load", 1, True,
                                "the thread's local word at a + offset", space=LOCAL)
    ops[f"st.{LOCAL}"] = OpSpec(f"st.{LOCAL}", "store", 2, False,
                                "the thread's local word at a + offset <- b", space=LOCAL)
    for mode in SHFL_MODES:
        ops[f"shfl.{mode}"] = OpSpec(f"shfl.{mode}", "shfl", 3, True,
                                     f"a from lane j (PTX shfl.sync.{mode}; b, c as in PTX)",
                                     mode=mode)
    ops["ballot"] = OpSpec("ballot", "vote", 1, True,
                           "bit i set iff lane i is active and its a != 0")
    return ops


OPS: dict[str, OpSpec] = _build()

TERMINATORS = {
    "jmp": "jmp T: every active lane continues at block T",
    "br": "br c, T, F: each active lane continues at T if its c != 0, else at F",
    "bar": "bar T: active lanes wait at the CTA barrier, then continue at T",
    "bar.group": "bar.group T: active lanes wait at their 32-thread group's barrier, then "
                 "continue at T",
    "exit": "exit: active lanes finish",
}
