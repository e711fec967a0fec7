"""cuda.divide: div and rem (signed and unsigned 32-bit) as native code.

The machine has no divider. Unsigned division is a shift-subtract loop that fits one
machine block (4 stages) and runs only as many times as the quotient has bits: the
quotient register starts as a sentinel bit at position 31 - s, where s = clz(d) - clz(n),
so clz(q) is the current bit index, the sentinel reaching bit 31 marks the last step, and
it falls off the top exactly when the last quotient bit enters at the bottom:

    i = clz q ; q2 = q << 1 ; more = q >s 0          (q <= 0: last step, or nothing to do)
    t = r >> i ; ds = d << i
    c = t >=u d ; diff = r - ds                      (c: d << i fits under r)
    r = c ? diff : r ; q = q2 | c
    br more, loop, done

Division by zero gives what a real NVIDIA GPU gives (measured on an H200 through the
driver's PTX JIT, tests/cuda/device_divrem.py): x / 0 and x % 0 are 0xffffffff, signed
and unsigned alike (the loop already yields ~0 for the unsigned quotient; one select
fixes the others). Signed division works on magnitudes and fixes the signs afterwards
(truncation toward zero; INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 is 0).
"""

from __future__ import annotations

from qgpu.cuda.ir import CondBr, Goto, V
from qgpu.isa import Imm


def _unsigned_divmod(b, n, d) -> tuple[V, V]:
    """Emit the loop for n / d and n % d (unsigned) through builder b; returns (q, r)."""
    q, r = b.tmp(), b.tmp()
    a_clz, n_clz, n_clz2, s = b.tmp(), b.tmp(), b.tmp(), b.tmp()
    b.emit("clz", a_clz, d)
    b.emit("clz", n_clz, n)
    # d == 0: pretend clz(n) = 1, so s = 31 and 32 steps that all succeed: q = ~0, r = n
    b.emit("selp", n_clz2, n_clz, Imm(1), d)
    b.emit("sub", s, a_clz, n_clz2)
    # s < 0 (n < d): the shift amount is huge as unsigned, q = 0, and one harmless step runs
    b.emit("shr.u", q, Imm(0x80000000), s)
    b.emit("mov", r, n)
    loop = b.new_block("div_loop", single_block=True)
    done = b.new_block("div_done")
    b.finish(Goto(loop.name))
    b.start(loop)
    i, q2, more, t, ds, c, diff = (b.tmp() for _ in range(7))
    b.emit("clz", i, q)
    b.emit("shl", q2, q, Imm(1))
    b.emit("setgt.s", more, q, Imm(0))
    b.emit("shr.u", t, r, i)
    b.emit("shl", ds, d, i)
    b.emit("setge.u", c, t, d)
    b.emit("sub", diff, r, ds)
    b.emit("selp", r, diff, r, c)
    b.emit("or", q, q2, c)
    b.finish(CondBr(more, loop.name, done.name))
    b.start(done)
    return q, r


def _magnitude(b, x) -> tuple[V, V]:
    """(sign mask, |x|) with sign mask = x >> 31 (arithmetic)."""
    sign, neg, mag = b.tmp(), b.tmp(), b.tmp()
    b.emit("shr.s", sign, x, Imm(31))
    b.emit("sub", neg, Imm(0), x)
    b.emit("max.s", mag, x, neg)          # |INT_MIN| = 2^31 as unsigned, as wanted
    return sign, mag


def emit_divrem(b, kind: str, signed: bool, dst: V, n, d) -> None:
    """dst <- n / d (kind 'div') or n % d (kind 'rem'), 32-bit, PTX semantics."""
    if not signed:
        q, r = _unsigned_divmod(b, n, d)
        if kind == "div":
            b.emit("mov", dst, q)
        else:
            b.emit("selp", dst, r, Imm(0xFFFFFFFF), d)
        return
    n_sign, n_mag = _magnitude(b, n)
    d_sign, d_mag = _magnitude(b, d)
    if kind == "div":
        q_sign = b.tmp()
        b.emit("xor", q_sign, n_sign, d_sign)
    q, r = _unsigned_divmod(b, n_mag, d_mag)
    # apply a sign mask m (0 or -1): (x ^ m) - m
    x, m = (q, q_sign) if kind == "div" else (r, n_sign)
    flipped, signed_result = b.tmp(), b.tmp()
    b.emit("xor", flipped, x, m)
    b.emit("sub", signed_result, flipped, m)
    b.emit("selp", dst, signed_result, Imm(0xFFFFFFFF), d)

