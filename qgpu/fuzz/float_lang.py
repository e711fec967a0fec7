"""fuzz.float_lang: the language of the float fuzzer (fuzz.float_kernels): random float32
expressions, their CUDA source, and the same expressions as host C++ (host_expr) whose
native build on this CPU (fuzz.float_host) is the oracle.

Types are "f" (float) and "i" (int). Float nodes: + - * / (plain C operators), the
explicit never-contracted intrinsics __fadd_rn __fsub_rn __fmul_rn __fdiv_rn, fmaf,
sqrtf, fabsf, unary -, fminf, fmaxf, rintf, truncf, floorf, ceilf, (float)int,
(float)unsigned, __int_as_float, and ?: on a float comparison. Int nodes: (int)x (guarded:
out-of-range is undefined in C), __float2int_rn/rz/rd/ru, __float2uint_rz, __float_as_int,
ordered and unordered (`!(a < b)`) comparisons, wrapping + - ^ &.

Contraction. clang compiles CUDA with -ffp-contract=fast: every plain `*` carries LLVM's
`contract` flag and the NVPTX back end fuses an fadd/fsub with an fmul operand into
`fma.rn.f32` (aggressively: a multiply with other uses is fused too, within a basic
block). Measured on clang-19 (see docs/cuda.md, "float32"):
  a*b + c, c + a*b, a*b - c, c - a*b, -(a*b) + c   -> one fma (negations fold into it)
  a / 4.0f + c                                      -> fma(a, 0.25, c): a division by a
        power of two with a normal reciprocal becomes a contractable multiply first
  a*b + c*d                                         -> fma of one product, the other
        rounded; which one depends on the products' other uses: never generated
  (p ? a*b : a*d) + c                               -> InstCombine sinks the select into
        the multiply (a * (p ? b : d)) and the add fuses: ternary arms are never plain
        products (the generator makes them __fmul_rn)
  a*b inside fminf, sqrtf, comparisons, conversions, ?: arms, fmaf's operands -> not fused
The host side emits an explicit fma exactly where the device fuses (`contracted`), and
every other operation as a separately rounded one (host built with -ffp-contract=off).

NaN. The host rounds every arithmetic NaN to the canonical 0x7fffffff a GPU writes (x86
would propagate a payload or write 0xffc00000) and moves bits unchanged where the device
only moves bits (neg, fabs, ?:, __int_as_float). What the C side cannot know is the payload
of a NaN that clang made at compile time (constant folding writes LLVM's 0x7fc00000) or by
rewriting `x * -1.0f` into a sign flip: so a float output where both sides are NaN matches
("both NaN", counted apart), and an int output that took the bits of a NaN
(__float_as_int) is compared only when the host saw no NaN there (counted apart).
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass

INF, NAN, SIGN = 0x7F800000, 0x7FFFFFFF, 0x80000000


def bits_of(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def float_of(b: int) -> float:
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def is_nan(b: int) -> bool:
    return (b & 0x7FFFFFFF) > INF


# --- the expression tree -----------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    name: str
    typ: str


@dataclass(frozen=True)
class Const:
    bits: int          # a float's bit pattern (never NaN) or an int's value
    typ: str


@dataclass(frozen=True)
class Op:
    """An operation: `op` names it (see EMIT), args are its operands."""
    op: str
    args: tuple

    @property
    def typ(self) -> str:
        return SIGNATURES[self.op][0]


@dataclass(frozen=True)
class Select:
    cond: object       # an int-typed comparison
    then: object
    other: object

    @property
    def typ(self) -> str:
        return self.then.typ


# op -> (result type, operand types)
SIGNATURES = {
    "+": ("f", "ff"), "-": ("f", "ff"), "*": ("f", "ff"), "/": ("f", "ff"),
    "add_rn": ("f", "ff"), "sub_rn": ("f", "ff"), "mul_rn": ("f", "ff"),
    "div_rn": ("f", "ff"), "fma": ("f", "fff"), "sqrt": ("f", "f"), "abs": ("f", "f"),
    "neg": ("f", "f"), "min": ("f", "ff"), "max": ("f", "ff"), "rint": ("f", "f"),
    "trunc": ("f", "f"), "floor": ("f", "f"), "ceil": ("f", "f"), "i2f": ("f", "i"),
    "u2f": ("f", "i"), "as_float": ("f", "i"),
    "to_int": ("i", "f"), "f2i_rn": ("i", "f"), "f2i_rz": ("i", "f"), "f2i_rd": ("i", "f"),
    "f2i_ru": ("i", "f"), "f2u_rz": ("i", "f"), "as_int": ("i", "f"),
    "<": ("i", "ff"), "<=": ("i", "ff"), ">": ("i", "ff"), ">=": ("i", "ff"),
    "==": ("i", "ff"), "!=": ("i", "ff"), "!<": ("i", "ff"), "!<=": ("i", "ff"),
    "!>": ("i", "ff"), "!>=": ("i", "ff"), "!==": ("i", "ff"),
    "i+": ("i", "ii"), "i-": ("i", "ii"), "i^": ("i", "ii"), "i&": ("i", "ii"),
}
FLOAT_BINARY = ("+", "-", "*", "/", "add_rn", "sub_rn", "mul_rn", "div_rn", "min", "max")
FLOAT_UNARY = ("sqrt", "abs", "neg", "rint", "trunc", "floor", "ceil")
COMPARES = ("<", "<=", ">", ">=", "==", "!=", "!<", "!<=", "!>", "!>=", "!==")
TO_INT = ("to_int", "f2i_rn", "f2i_rz", "f2i_rd", "f2i_ru", "f2u_rz", "as_int")

# device spelling (CUDA) and host spelling (the oracle's helpers, _HOST_PRELUDE)
_DEVICE_CALL = {"add_rn": "__fadd_rn", "sub_rn": "__fsub_rn", "mul_rn": "__fmul_rn",
                "div_rn": "__fdiv_rn", "fma": "fmaf", "sqrt": "sqrtf", "abs": "fabsf",
                "min": "fminf", "max": "fmaxf", "rint": "rintf", "trunc": "truncf",
                "floor": "floorf", "ceil": "ceilf", "as_float": "__int_as_float",
                "to_int": "q_toint", "f2i_rn": "__float2int_rn", "f2i_rz": "__float2int_rz",
                "f2i_rd": "__float2int_rd", "f2i_ru": "__float2int_ru",
                "f2u_rz": "(int)__float2uint_rz", "as_int": "__float_as_int"}
_HOST_CALL = {"+": "q_add", "-": "q_sub", "*": "q_mul", "/": "q_div", "add_rn": "q_add",
              "sub_rn": "q_sub", "mul_rn": "q_mul", "div_rn": "q_div", "fma": "q_fma",
              "sqrt": "q_sqrt", "abs": "q_abs", "neg": "q_neg", "min": "q_min",
              "max": "q_max", "rint": "q_rint", "trunc": "q_trunc", "floor": "q_floor",
              "ceil": "q_ceil", "as_float": "q_asfloat", "to_int": "q_toint",
              "f2i_rn": "q_f2i_rn", "f2i_rz": "q_f2i_rz", "f2i_rd": "q_f2i_rd",
              "f2i_ru": "q_f2i_ru", "f2u_rz": "(int)q_f2u_rz", "as_int": "q_asint"}


# --- where clang contracts ---------------------------------------------------------------


def _pow2_reciprocal(c) -> int | None:
    """The bits of 1/c when c is a float constant +-2^k whose reciprocal is normal (LLVM
    rewrites x / c as x * (1/c) exactly then), else None."""
    if not isinstance(c, Const) or c.typ != "f" or c.bits & 0x7FFFFF:
        return None
    exp = (c.bits >> 23) & 0xFF
    if not 1 <= exp <= 254:
        return None
    k = exp - 127
    if not -126 <= k <= 126:
        return None
    return (c.bits & SIGN) | ((127 - k) << 23)


def product(e):
    """(negated, x, y) when e is a product the back end may fuse into an add: a plain `*`
    or a division by a power of two, under any number of unary minuses; else None."""
    negated = False
    while isinstance(e, Op) and e.op == "neg":
        negated, e = not negated, e.args[0]
    if isinstance(e, Op) and e.op == "*":
        return negated, e.args[0], e.args[1]
    if isinstance(e, Op) and e.op == "/":
        inverse = _pow2_reciprocal(e.args[1])
        if inverse is not None:
            return negated, e.args[0], Const(inverse, "f")
    return None


def _constant(e) -> bool:
    return isinstance(e, Const) or (isinstance(e, Op) and e.op == "neg"
                                    and _constant(e.args[0]))


def _folded(p) -> bool:
    """A product of two constants: clang folds it (rounded) before it contracts, so the
    sum stays a plain add (seen: 0x1.555556p-2f * 2.5f + x was no fma)."""
    return p is not None and _constant(p[1]) and _constant(p[2])


def contracted(e: Op):
    """For a plain + or - that clang fuses into an fma: (x, y, z, negate_product), the fma
    being x*y*(+-1) + z; else None. (Never both operands products: the generator avoids
    that shape.)"""
    if not (isinstance(e, Op) and e.op in ("+", "-")):
        return None
    left, right = e.args
    p, q = (None if _folded(x) else x for x in (product(left), product(right)))
    if p and q:
        raise ValueError("a sum of two products: which one clang fuses is not fixed")
    if p:
        neg, x, y = p
        return x, y, (right if e.op == "+" else Op("neg", (right,))), neg
    if q:
        neg, x, y = q
        return x, y, left, neg != (e.op == "-")
    return None


# --- C sources ---------------------------------------------------------------------------


def float_literal(b: int, host: bool = False) -> str:
    """An exact C float literal for the (non-NaN) pattern b (infinities as bit casts,
    which nvcc's NVRTC, clang and the host all read alike)."""
    if (b & 0x7FFFFFFF) == INF:
        return f"q_bits({b}u)" if host else f"__int_as_float({int_literal(b)})"
    return f"({float.hex(float_of(b))}f)"


def int_literal(v: int) -> str:
    v &= 0xFFFFFFFF
    v = v - (1 << 32) if v & SIGN else v
    return "(-2147483647 - 1)" if v == -(2**31) else f"({v})"


def _const(e: Const, host: bool = False) -> str:
    return float_literal(e.bits, host) if e.typ == "f" else int_literal(e.bits)


def _compare(op: str, a: str, b: str) -> str:
    if op.startswith("!") and op != "!=":     # unordered: true on NaN
        return f"(!(({a}) {op[1:]} ({b})))"
    return f"(({a}) {op} ({b}))"


def _int_op(op: str, a: str, b: str) -> str:
    return f"((int)((unsigned)({a}) {op[1]} (unsigned)({b})))"


def device_expr(e) -> str:
    """CUDA as a programmer writes it: plain operators (clang contracts them)."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return _const(e)
    if isinstance(e, Select):
        return f"(({device_expr(e.cond)}) ? ({device_expr(e.then)}) : " \
               f"({device_expr(e.other)}))"
    args = [device_expr(a) for a in e.args]
    op = e.op
    if op in ("+", "-", "*", "/"):
        return f"(({args[0]}) {op} ({args[1]}))"
    if op == "neg":
        return f"(-({args[0]}))"
    if op in ("i2f", "u2f"):
        return f"((float)({'(unsigned)' if op == 'u2f' else ''}({args[0]})))"
    if op in COMPARES:
        return _compare(op, *args)
    if op.startswith("i"):
        return _int_op(op, *args)
    return f"{_DEVICE_CALL[op]}({', '.join(args)})"


def host_expr(e) -> str:
    """The oracle's C++: every operation a helper of _HOST_PRELUDE, an fma exactly where
    clang contracts."""
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Const):
        return _const(e, host=True)
    if isinstance(e, Select):
        return f"(({host_expr(e.cond)}) ? ({host_expr(e.then)}) : ({host_expr(e.other)}))"
    fused = contracted(e)
    if fused:
        x, y, z, negate = fused
        xs = host_expr(x)
        return f"q_fma({f'q_neg({xs})' if negate else xs}, {host_expr(y)}, {host_expr(z)})"
    args = [host_expr(a) for a in e.args]
    op = e.op
    if op in ("i2f", "u2f"):
        return f"((float)({'(unsigned)' if op == 'u2f' else ''}({args[0]})))"
    if op in COMPARES:
        return _compare(op, *args)
    if op.startswith("i") and op in SIGNATURES and len(op) == 2:
        return _int_op(op, *args)
    return f"{_HOST_CALL[op]}({', '.join(args)})"


FLOAT_VARS = [Var("a", "f"), Var("b", "f"), Var("c", "f")]
INT_VARS = [Var("i", "i"), Var("j", "i")]
N_FLOATS, N_INTS = len(FLOAT_VARS), len(INT_VARS)

_DEVICE_HELPERS = """\
__device__ int q_toint(float x) {   // (int)x where C defines it, else 0
  return (x > -2147483904.0f && x < 2147483648.0f) ? (int)x : 0;
}
"""


@dataclass
class Program:
    """float outputs then int outputs, each an expression over a, b, c (float) and i, j
    (int): thread t reads f[3t..3t+2] and n[2t..2t+1] and writes fo[t*F..] and io[t*I..]."""
    float_outputs: list
    int_outputs: list
    name: str = "fuzzf"
    barriers: bool = False  # the kernel: __syncthreads() after each output (no data is
    # shared: the outputs are the same, the float code before the barriers pushes their
    # blocks high: issue 36's class, in CTAs of several warps)

    def body(self, expr, sync: bool = False) -> list[str]:
        nf, ni = len(self.float_outputs), len(self.int_outputs)
        barrier = ["  __syncthreads();"] if sync and self.barriers else []
        lines = ["  float a = f[3 * t], b = f[3 * t + 1], c = f[3 * t + 2];",
                 "  int i = n[2 * t], j = n[2 * t + 1];"]
        for k, e in enumerate(self.float_outputs):
            lines += [f"  fo[{nf} * t + {k}] = {expr(e)};", *barrier]
        for k, e in enumerate(self.int_outputs):
            lines += [f"  io[{ni} * t + {k}] = {expr(e)};", *barrier]
        return lines

    def source(self) -> str:
        return "\n".join([
            _DEVICE_HELPERS,
            f"__global__ void {self.name}(const float *f, const int *n, float *fo, int *io) {{",
            "  int t = blockIdx.x * blockDim.x + threadIdx.x;",
            *self.body(device_expr, sync=True), "}"]) + "\n"

    def host_function(self, index: int) -> str:
        return "\n".join([
            f"static void prog{index}(const float *f, const int *n, float *fo, int *io, "
            "int t) {", *self.body(host_expr), "}"]) + "\n"


# --- generation --------------------------------------------------------------------------

FLOAT_CONSTS = [0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F000000, 0x40000000,
                0x40800000, 0x3E800000, 0xC0000000, 0x40400000, 0x3FC00000, 0x40200000,
                0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x00000001, 0x807FFFFF, 0x7F800000,
                0xFF800000, 0x4B800001, 0x4EFFFFFF, 0x4F000000, 0xCF000000, 0x3EAAAAAB,
                0x3DCCCCCD, 0x7E800000, 0x01000000]
INT_CONSTS = [0, 1, -1, 2, 16777217, 0x7FFFFFFF, -(2**31), 0x7F800000, 0x7FC00000, 3]


# what the model's integer lowering of floats (cuda.softfloat) does not cover yet: the
# model refuses a program with these (division, square root, round-to-integral)
NOT_ON_MODEL = ("/", "div_rn", "sqrt", "rint", "trunc", "floor", "ceil")


class Generator:
    """Random float and int expressions that avoid the shapes whose contraction clang
    leaves open (see the module docstring); `model`: only operations the model runs, and
    smaller trees (each float operation costs the model ~1,000 tokens)."""

    def __init__(self, rng: random.Random, model: bool = False):
        self.rng = rng
        self.model = model

    def pick(self, ops):
        return self.rng.choice([o for o in ops if not (self.model and o in NOT_ON_MODEL)])

    def leaf(self, typ: str):
        rng = self.rng
        if rng.random() < 0.7:
            return rng.choice(FLOAT_VARS if typ == "f" else INT_VARS)
        if typ == "f":
            bits = rng.choice(FLOAT_CONSTS) if rng.random() < 0.8 else \
                bits_of(rng.uniform(-100, 100))
            return Const(bits, "f")
        return Const(rng.choice(INT_CONSTS) & 0xFFFFFFFF, "i")

    def fexpr(self, depth: int):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.2:
            return self.leaf("f")
        k = rng.random()
        if k < 0.45:                                       # + - * / : contraction shapes
            op = self.pick(["+", "-", "+", "-", "*", "*", "/"])
            left, right = self.fexpr(depth - 1), self.fexpr(depth - 1)
            if op in ("+", "-") and product(left) and product(right):
                right = self.leaf("f")
            return Op(op, (left, right))
        if k < 0.6:
            return Op(self.pick(FLOAT_BINARY[4:]), (self.fexpr(depth - 1),
                                                     self.fexpr(depth - 1)))
        if k < 0.68:
            return Op("fma", tuple(self.fexpr(depth - 1) for _ in range(3)))
        if k < 0.82:
            return Op(self.pick(FLOAT_UNARY), (self.fexpr(depth - 1),))
        if k < 0.9:
            return Op(rng.choice(["i2f", "u2f", "as_float"]), (self.iexpr(depth - 1),))
        return Select(self.compare(depth - 1), self.arm(depth - 1), self.arm(depth - 1))

    def arm(self, depth: int):
        """A ?: arm: never a product clang could sink the select into."""
        e = self.fexpr(depth)
        p = product(e)
        return Op("mul_rn", (p[1], p[2])) if p else e

    def compare(self, depth: int):
        return Op(self.rng.choice(COMPARES), (self.fexpr(depth), self.fexpr(depth)))

    def iexpr(self, depth: int):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.15:
            return self.leaf("i")
        k = rng.random()
        if k < 0.55:
            return Op(rng.choice(TO_INT), (self.fexpr(depth - 1),))
        if k < 0.75:
            return self.compare(depth - 1)
        if k < 0.9:
            return Op(rng.choice(["i+", "i-", "i^", "i&"]), (self.iexpr(depth - 1),
                                                              self.iexpr(depth - 1)))
        return Select(self.compare(depth - 1), self.iexpr(depth - 1), self.iexpr(depth - 1))


def generate_program(rng: random.Random, model: bool = False) -> Program:
    """model: a program the model machine runs (NOT_ON_MODEL left out, depth <= 2)."""
    gen = Generator(rng, model)
    deep = 2 if model else 4
    floats = [gen.fexpr(rng.randint(1, deep)) for _ in range(rng.randint(1, 3 - model))]
    ints = [gen.iexpr(rng.randint(1, deep - 1)) for _ in range(rng.randint(0, 2 - model))]
    return Program(floats, ints)


EDGE_FLOATS = FLOAT_CONSTS + [
    0x7FFFFFFF, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x007FFFFF, 0x80000001,
    0x00400000, 0x3F800001, 0x3F7FFFFF, 0x4B7FFFFF, 0x4B000000, 0xCB000001, 0x3F200000,
    0xBFC00000, 0x40100000, 0x4F800000, 0xCF000001, 0x33800000, 0x34000000]
EDGE_INTS = INT_CONSTS + [-2, 16777216, -16777217, 0x7FFFFF80, 0x3F800000, 0xFF800000,
                          255, -256, 0x00800000, 12345678]


def make_inputs(rng: random.Random, threads: int) -> list[tuple[list[int], list[int]]]:
    """Per thread (float bit patterns a, b, c; ints i, j), biased to the edges: zeros,
    subnormals, the largest finite values, infinities, NaNs with several payloads,
    ties of rounding and of conversion, and values near each other (cancellation)."""
    rows = []
    for _ in range(threads):
        fl = []
        for _k in range(N_FLOATS):
            pick = rng.random()
            if pick < 0.4:
                fl.append(rng.choice(EDGE_FLOATS))
            elif pick < 0.55 and fl:
                prev = rng.choice(fl)     # near another operand: -x, x, next float
                fl.append(rng.choice([prev ^ SIGN, prev, (prev + rng.choice([1, -1]))
                                      & 0xFFFFFFFF]))
            elif pick < 0.8:
                fl.append(bits_of(rng.choice([-1, 1]) * rng.uniform(0, 4)
                                  * 10.0 ** rng.randint(-6, 6)))
            else:
                fl.append(rng.getrandbits(32))
        ints = [rng.choice(EDGE_INTS) & 0xFFFFFFFF if rng.random() < 0.5 else
                rng.choice([rng.randint(-1000, 1000), rng.getrandbits(32)]) & 0xFFFFFFFF
                for _ in range(N_INTS)]
        rows.append((fl, ints))
    return rows
