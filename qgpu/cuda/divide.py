"""cuda.divide: div and rem (signed and unsigned 32-bit) as native code.

The machine has no divider. Unsigned division is a shift-subtract loop that runs only as
many times as the quotient has bits. Its quotient register starts as a sentinel bit at
position 31 - s, where s = clz(d) - clz(n): the sentinel reaching bit 31 marks the last
step, and it falls off the top exactly when the last quotient bit enters at the bottom.
Two loop bodies, chosen by the machine's shape:

  * wide machines (SLOTS >= 3, STAGES >= 4): 9 operations in 4 stages, one machine block
    per iteration, only r and q written back (clz(q) is the current bit index i):

        i = clz q ; q2 = q << 1 ; more = q >s 0        (q <= 0: last step, or nothing to do)
        t = r >> i ; ds = d << i
        c = t >=u d ; diff = r - ds                    (c: d << i fits under r)
        r = c ? diff : r ; q = q2 | c                  ; br more, loop, done

  * narrow machines: 7 operations in 2 stages, the shifted divisor ds = d << i carried as
    a third loop value (more write-back, far fewer stages: one block per iteration at
    SLOTS = 2 and STAGES = 4, two at SLOTS = 1):

        c = r >=u ds ; diff = r - ds ; q2 = q << 1 ; more = q >s 0 ; ds = ds >> 1
        r = min.u(r, diff) ; q = q2 | c                ; br more, loop, done

    (r - ds wraps above r exactly when ds > r, so the unsigned minimum is the restoring
    step.) Here s is clamped at 0: n < d runs one step with ds = d > r, which sets no bit.

Either loop spans several machine blocks when one does not hold its body; the scheduler
cuts it like any other basic block. Division by zero gives what a real NVIDIA GPU gives
(measured on an H200 through the driver's PTX JIT, tests/cuda/device_divrem.py): x / 0
and x % 0 are 0xffffffff, signed and unsigned alike (the loop already yields ~0 for the
unsigned quotient; one select fixes the others). Signed division works on magnitudes and
fixes the signs afterwards (truncation toward zero; INT_MIN / -1 wraps to INT_MIN,
INT_MIN % -1 is 0).
"""

from __future__ import annotations

from qgpu.cuda.ir import CondBr, Goto, V
from qgpu.isa import Imm, limits


def wide_loop() -> bool:
    """Whether the 4-stage loop body (fewer write-backs) fits one machine block."""
    return limits.SLOTS >= 3 and limits.STAGES >= 4


def _normalise(b, n, d, clamp: bool) -> V:
    """s = clz(d) - clz(n), the index of the quotient's top bit (clamped at 0 if asked);
    d == 0 pretends clz(n) = 1, so s = 31 and 32 steps that all succeed: q = ~0, r = n."""
    a_clz, n_clz, n_clz2, s = b.tmp(), b.tmp(), b.tmp(), b.tmp()
    b.emit("clz", a_clz, d)
    b.emit("clz", n_clz, n)
    b.emit("selp", n_clz2, n_clz, Imm(1), d)
    b.emit("sub", s, a_clz, n_clz2)
    if clamp:
        s0, s = s, b.tmp()
        b.emit("max.s", s, s0, Imm(0))
    return s


def rem_steps() -> int:
    """Restoring steps per iteration of the remainder loop: two where they fit one
    machine block (4 stages, 2 slots), else one."""
    return 2 if limits.SLOTS >= 2 and limits.STAGES >= 4 else 1


def _unsigned_rem(b, n, d) -> V:
    """Emit the remainder-only loop for n % d (unsigned) through builder b; returns r.

    No quotient: r and the shifted divisor ds are the loop's only values, each step is
    two operations deep (diff = r - ds ; r = min.u(r, diff)), and the loop runs while
    ds > d. Two steps per iteration when they fit: the second uses max.u(ds >> 1, d),
    and repeating the step at d is harmless (r < d already), so an odd count needs no
    care. d == 0 runs one step with ds = 0 (r = n; the caller's select gives ~0)."""
    s = _normalise(b, n, d, clamp=True)
    ds, r = b.tmp(), b.tmp()
    b.emit("shl", ds, d, s)
    b.emit("mov", r, n)
    loop = b.new_block("rem_loop", keep_whole=True)
    done = b.new_block("rem_done")
    b.finish(Goto(loop.name))
    b.start(loop)
    cur = ds
    for k in range(rem_steps()):
        if k:
            half, nxt = b.tmp(), b.tmp()
            b.emit("shr.u", half, cur, Imm(1))
            b.emit("max.u", nxt, half, d)
            cur = nxt
        diff = b.tmp()
        b.emit("sub", diff, r, cur)
        b.emit("min.u", r, r, diff)
    more = b.tmp()
    b.emit("setgt.u", more, cur, d)
    b.emit("shr.u", ds, cur, Imm(1))
    b.finish(CondBr(more, loop.name, done.name))
    b.start(done)
    return r


def _unsigned_divmod(b, n, d) -> tuple[V, V]:
    """Emit the loop for n / d and n % d (unsigned) through builder b; returns (q, r)."""
    wide = wide_loop()
    q, r = b.tmp(), b.tmp()
    s = _normalise(b, n, d, clamp=not wide)
    if not wide:
        ds = b.tmp()
        b.emit("shl", ds, d, s)
    # (wide) s < 0 (n < d): the shift amount is huge as unsigned, q = 0, and one harmless
    # step runs
    b.emit("shr.u", q, Imm(0x80000000), s)
    b.emit("mov", r, n)
    loop = b.new_block("div_loop", keep_whole=True)
    done = b.new_block("div_done")
    b.finish(Goto(loop.name))
    b.start(loop)
    if wide:
        i, q2, more, t, dsi, c, diff = (b.tmp() for _ in range(7))
        b.emit("clz", i, q)
        b.emit("shl", q2, q, Imm(1))
        b.emit("setgt.s", more, q, Imm(0))
        b.emit("shr.u", t, r, i)
        b.emit("shl", dsi, d, i)
        b.emit("setge.u", c, t, d)
        b.emit("sub", diff, r, dsi)
        b.emit("selp", r, diff, r, c)
        b.emit("or", q, q2, c)
    else:
        c, diff, q2, more = (b.tmp() for _ in range(4))
        b.emit("setge.u", c, r, ds)
        b.emit("sub", diff, r, ds)
        b.emit("shl", q2, q, Imm(1))
        b.emit("setgt.s", more, q, Imm(0))
        b.emit("shr.u", ds, ds, Imm(1))
        b.emit("min.u", r, r, diff)
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
        if kind == "div":
            b.emit("mov", dst, _unsigned_divmod(b, n, d)[0])
        else:
            b.emit("selp", dst, _unsigned_rem(b, n, d), Imm(0xFFFFFFFF), d)
        return
    n_sign, n_mag = _magnitude(b, n)
    d_sign, d_mag = _magnitude(b, d)
    if kind == "div":
        q_sign = b.tmp()
        b.emit("xor", q_sign, n_sign, d_sign)
    if kind == "div":
        x, m = _unsigned_divmod(b, n_mag, d_mag)[0], q_sign
    else:
        x, m = _unsigned_rem(b, n_mag, d_mag), n_sign
    # apply a sign mask m (0 or -1): (x ^ m) - m
    flipped, signed_result = b.tmp(), b.tmp()
    b.emit("xor", flipped, x, m)
    b.emit("sub", signed_result, flipped, m)
    b.emit("selp", dst, signed_result, Imm(0xFFFFFFFF), d)

