"""Random small integer expressions over values whose range clang can see (thread and
block indices, masked bytes, char/short variables, constant divisors and moduli), as CUDA
source and as a Python evaluation with C's rules (integer promotion, the usual arithmetic
conversions, 32-bit wrap-around). The generator keeps every expression free of undefined
behaviour: a signed operation whose result interval could leave int is done in unsigned,
shifts are by constants below 32 on unsigned values, divisors are nonzero constants (never
-1). Used by test_narrow_coverage: clang-19 -O2 narrows such expressions to 16-bit (and
8-bit) PTX forms, which the front end must lower."""

from __future__ import annotations

import random
from dataclasses import dataclass

I32 = (-(1 << 31), (1 << 31) - 1)
U32 = (0, (1 << 32) - 1)

# name -> (C expression, type, lo, hi, Python evaluation from (tid, bid, ntid, v))
LEAVES = {
    "t": ("threadIdx.x", "u", 0, 15, lambda e: e["tid"]),
    "b": ("blockIdx.x", "u", 0, 3, lambda e: e["bid"]),
    "n": ("blockDim.x", "u", 1, 16, lambda e: e["ntid"]),
    "it": ("(int)threadIdx.x", "i", 0, 15, lambda e: e["tid"]),
    "c": ("c", "i", -128, 127, lambda e: _sext(e["v"], 8)),
    "uc": ("uc", "i", 0, 255, lambda e: e["v"] & 0xFF),
    "s": ("s", "i", -32768, 32767, lambda e: _sext(e["v"], 16)),
    "us": ("us", "i", 0, 65535, lambda e: e["v"] & 0xFFFF),
    "m": ("(v & 255)", "i", 0, 255, lambda e: e["v"] & 255),
    "h": ("(v >> 20)", "i", -2048, 2047, lambda e: _s32(e["v"]) >> 20),
    "top": ("((unsigned)v >> 24)", "u", 0, 255, lambda e: (e["v"] & 0xFFFFFFFF) >> 24),
}
DIVISORS = [2, 3, 5, 6, 7, 10, 12, 13, 100, 255, 1000, -3, -7, -10]


def _sext(x: int, bits: int) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def _s32(x: int) -> int:
    return _sext(x, 32)


@dataclass
class Expr:
    c: str                 # C text (fully parenthesised)
    typ: str               # "i" (int) or "u" (unsigned)
    lo: int                # value interval, in the type's own range
    hi: int
    ev: object             # env -> Python int in the type's range

    def value(self, env) -> int:
        x = self.ev(env)
        return _s32(x) if self.typ == "i" else x & 0xFFFFFFFF


def leaf(name: str) -> Expr:
    c, typ, lo, hi, ev = LEAVES[name]
    return Expr(c, typ, lo, hi, ev)


def const(value: int) -> Expr:
    return Expr(f"({value})", "i", value, value, lambda e: value)


def as_unsigned(x: Expr) -> Expr:
    if x.typ == "u":
        return x
    lo, hi = (x.lo, x.hi) if x.lo >= 0 else U32
    return Expr(f"((unsigned){x.c})", "u", lo, hi, lambda e: x.value(e) & 0xFFFFFFFF)


def _fits(lo: int, hi: int, typ: str) -> bool:
    r = I32 if typ == "i" else U32
    return r[0] <= lo and hi <= r[1]


def binary(op: str, x: Expr, y: Expr) -> Expr:
    """x op y with C's conversions; signed results that might overflow go unsigned."""
    typ = "u" if "u" in (x.typ, y.typ) else "i"
    if typ == "u":
        x, y = as_unsigned(x), as_unsigned(y)
    corners = None
    if op in "+-*":
        f = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}[op]
        corners = [f(a, b) for a in (x.lo, x.hi) for b in (y.lo, y.hi)]
        if typ == "i" and not _fits(min(corners), max(corners), "i"):
            return binary(op, as_unsigned(x), as_unsigned(y))
        lo, hi = (min(corners), max(corners)) if _fits(min(corners), max(corners), typ) \
            else (U32 if typ == "u" else I32)
        mask = 0xFFFFFFFF
        return Expr(f"({x.c} {op} {y.c})", typ, lo, hi,
                    lambda e: f(x.value(e), y.value(e)) & mask)
    if op in ("&", "|", "^"):
        f = {"&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}[op]
        lo, hi = (0, max(x.hi, y.hi) * 2 + 1) if x.lo >= 0 and y.lo >= 0 else \
            (U32 if typ == "u" else I32)
        if not _fits(lo, hi, typ):
            lo, hi = U32 if typ == "u" else I32
        return Expr(f"({x.c} {op} {y.c})", typ, lo, hi, lambda e: f(x.value(e), y.value(e)))
    if op in ("<", "<=", ">", ">=", "==", "!="):
        f = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
             ">=": lambda a, b: a >= b, "==": lambda a, b: a == b,
             "!=": lambda a, b: a != b}[op]
        return Expr(f"({x.c} {op} {y.c})", "i", 0, 1, lambda e: int(f(x.value(e), y.value(e))))
    if op in ("min", "max"):
        f = min if op == "min" else max
        return Expr(f"{op}({x.c}, {y.c})", typ, f(x.lo, y.lo), f(x.hi, y.hi),
                    lambda e: f(x.value(e), y.value(e)))
    raise ValueError(op)


def divide(op: str, x: Expr, d: int) -> Expr:
    """x / d or x % d by a nonzero constant, truncating like C."""
    typ = x.typ
    if typ == "u":
        d = abs(d)
        f = (lambda a: a // d) if op == "/" else (lambda a: a % d)
        lo, hi = (0, x.hi // d) if op == "/" else (0, d - 1)
        return Expr(f"({x.c} {op} {d}u)", "u", lo, hi, lambda e: f(x.value(e)))

    def c_div(a):
        q = abs(a) // abs(d)
        return q if (a >= 0) == (d > 0) else -q

    f = c_div if op == "/" else (lambda a: a - c_div(a) * d)
    m = max(abs(x.lo), abs(x.hi))
    lo, hi = (-(m // abs(d)), m // abs(d)) if op == "/" else (-(abs(d) - 1), abs(d) - 1)
    return Expr(f"({x.c} {op} ({d}))", "i", lo, hi, lambda e: f(x.value(e)))


def divide_by(op: str, x: Expr, y: Expr) -> Expr:
    """x / y or x % y by a value clang knows is positive (blockDim.x, t + 1, uc | 1)."""
    assert y.lo > 0
    typ = "u" if "u" in (x.typ, y.typ) else "i"
    if typ == "u":
        x, y = as_unsigned(x), as_unsigned(y)
        f = (lambda a, b: a // b) if op == "/" else (lambda a, b: a % b)
        lo, hi = (0, x.hi) if op == "/" else (0, y.hi - 1)
        return Expr(f"({x.c} {op} {y.c})", "u", lo, hi, lambda e: f(x.value(e), y.value(e)))

    def c_div(a, b):
        q = abs(a) // b
        return q if a >= 0 else -q

    f = c_div if op == "/" else (lambda a, b: a - c_div(a, b) * b)
    m = max(abs(x.lo), abs(x.hi))
    lo, hi = (-m, m) if op == "/" else (-(y.hi - 1), y.hi - 1)
    return Expr(f"({x.c} {op} {y.c})", "i", lo, hi, lambda e: f(x.value(e), y.value(e)))


POSITIVE = [("blockDim.x", "u", 1, 16, lambda e: e["ntid"]),
            ("(int)(threadIdx.x + 1)", "i", 1, 16, lambda e: e["tid"] + 1),
            ("(uc | 1)", "i", 1, 255, lambda e: (e["v"] & 0xFF) | 1),
            ("(us | 1)", "i", 1, 65535, lambda e: (e["v"] & 0xFFFF) | 1)]


def shift(op: str, x: Expr, k: int) -> Expr:
    x = as_unsigned(x)
    if op == "<<":
        hi = x.hi << k
        lo, hi = (x.lo << k, hi) if hi <= U32[1] else U32
        return Expr(f"({x.c} << {k})", "u", lo, hi, lambda e: (x.value(e) << k) & 0xFFFFFFFF)
    return Expr(f"({x.c} >> {k})", "u", x.lo >> k, x.hi >> k, lambda e: x.value(e) >> k)


def unary(op: str, x: Expr) -> Expr:
    if op == "~":
        lo, hi = (~x.hi, ~x.lo) if x.typ == "i" else U32
        return Expr(f"(~{x.c})", x.typ, lo, hi, lambda e: ~x.value(e))
    if op == "-":
        if x.typ == "i" and x.lo > I32[0]:
            return Expr(f"(-{x.c})", "i", -x.hi, -x.lo, lambda e: -x.value(e))
        x = as_unsigned(x)
        return Expr(f"(-{x.c})", "u", *U32, lambda e: -x.value(e))
    if op == "abs" and x.typ == "i" and x.lo > I32[0]:
        return Expr(f"abs({x.c})", "i", 0, max(abs(x.lo), abs(x.hi)),
                    lambda e: abs(x.value(e)))
    if op in ("popc", "clz"):
        x = as_unsigned(x)
        f = (lambda a: bin(a).count("1")) if op == "popc" else (lambda a: 32 - a.bit_length())
        return Expr(f"__{op}({x.c})", "i", 0, 32, lambda e: f(x.value(e)))
    if op == "narrow":          # through a short/char temporary: (short)(x), (unsigned char)x
        bits, signed = random.choice([(8, True), (8, False), (16, True), (16, False)])
        ctype = {(8, True): "signed char", (8, False): "unsigned char",
                 (16, True): "short", (16, False): "unsigned short"}[(bits, signed)]
        lo, hi = (-(1 << bits - 1), (1 << bits - 1) - 1) if signed else (0, (1 << bits) - 1)
        return Expr(f"(({ctype}){x.c})", "i", lo, hi,
                    lambda e: _sext(x.value(e), bits) if signed else x.value(e) & (1 << bits) - 1)
    return x


def select(cond: Expr, x: Expr, y: Expr) -> Expr:
    typ = "u" if "u" in (x.typ, y.typ) else "i"
    if typ == "u":
        x, y = as_unsigned(x), as_unsigned(y)
    return Expr(f"({cond.c} ? {x.c} : {y.c})", typ, min(x.lo, y.lo), max(x.hi, y.hi),
                lambda e: x.value(e) if cond.value(e) else y.value(e))


def random_expr(rng: random.Random, depth: int = 2) -> Expr:
    if depth == 0 or rng.random() < 0.2:
        return leaf(rng.choice(list(LEAVES))) if rng.random() < 0.85 else \
            const(rng.choice([1, 3, 5, 7, 100, 255, -1, -9, 1000, 0x7fff]))
    kind = rng.random()
    x = random_expr(rng, depth - 1)
    if kind < 0.22:
        return divide(rng.choice("/%"), x, rng.choice(DIVISORS))
    if kind < 0.3:
        return divide_by(rng.choice("/%"), x, Expr(*rng.choice(POSITIVE)))
    if kind < 0.6:
        return binary(rng.choice(["+", "-", "*", "&", "|", "^", "<", "<=", ">", ">=", "==",
                                  "!=", "min", "max"]), x, random_expr(rng, depth - 1))
    if kind < 0.7:
        return shift(rng.choice(["<<", ">>"]), x, rng.randint(0, 31))
    if kind < 0.85:
        random.seed(rng.random())
        return unary(rng.choice(["~", "-", "abs", "narrow", "narrow", "popc", "clz"]), x)
    return select(binary(rng.choice(["<", ">", "==", "!="]), x, random_expr(rng, 0)),
                  random_expr(rng, depth - 1), random_expr(rng, depth - 1))


KERNEL = """__global__ void k(const int *a, int *o) {{
  int v = a[blockIdx.x * blockDim.x + threadIdx.x];
  signed char c = v; unsigned char uc = v; short s = v; unsigned short us = v;
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * {n};
{body}}}
"""


def kernel_source(exprs: list[Expr]) -> str:
    body = "".join(f"  o[i + {j}] = (int)({e.c});\n" for j, e in enumerate(exprs))
    return KERNEL.format(n=len(exprs), body=body)


def expected(exprs: list[Expr], grid: int, block: int, inputs: list[int]) -> list[int]:
    out = []
    for bid in range(grid):
        for tid in range(block):
            env = {"tid": tid, "bid": bid, "ntid": block, "v": inputs[bid * block + tid]}
            out += [_s32(e.value(env)) for e in exprs]
    return out
