"""machine.logic: exact step helpers and a constructor for the machine's hand-written
units.

Every machine unit is a set of steps (`primitives.mlp.step`: exact for integer-valued
forms) whose outputs add into fresh dims:
- a BITS output starts at -1 (one constant unit) and each true condition adds +2; the
  caller guarantees that at most one of a bit's conditions holds (exclusive cases), so
  the bit is exactly +-1;
- a ONEHOT output with a none member starts with none = 1; a true condition adds +1 to
  its member and -1 to none (at most one condition per group holds).
Conditions are written as `[form >= t]` over 0/1 values (`v01`) with optional `when`
conjuncts: `[form + big * (sum(when) - len(when)) >= t]`, exact when big exceeds the
range of `form - t`, and the disabled side stays a clean 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from qgpu.circuit.ir import BITS, ONEHOT, RAW, Circuit, Ref, Signal, Source, as_ref
from qgpu.circuit.units import make_unit
from qgpu.primitives import Form, MlpWriter, Threshold, plus, scaled
from qgpu.primitives.mlp import STEP_GAIN, product, step

SMALL = 16.0  # enough "big" for conditions over a few bits
WIDE = 2.0 ** 18  # enough for 16-bit sums and differences (< 2^17 in magnitude)


class Ctx:
    """What a unit body gets: the writer, dim lookup, the one dim, and form helpers."""

    def __init__(self, mlp: MlpWriter, dims, one: int):
        self.mlp, self.dims, self.one = mlp, dims, one

    def d(self, ref: Source) -> list[int]:
        return self.dims(as_ref(ref))

    def v01(self, ref: Source, i: int = 0) -> Form:
        """0/1 value of dim i of a BITS (+-1) or ONEHOT (0/1) ref."""
        ref = as_ref(ref)
        dim = self.dims(ref)[i]
        return {dim: 0.5, self.one: 0.5} if ref.kind == BITS else {dim: 1.0}

    def num(self, ref: Source, lo: int = 0, hi: int | None = None, signed: bool = False) -> Form:
        """The unsigned (or two's complement) integer spelled by bits lo..hi-1."""
        ref = as_ref(ref)
        hi = len(ref) if hi is None else hi
        form: Form = {}
        for k, i in enumerate(range(lo, hi)):
            w = 2.0 ** k
            if signed and i == hi - 1:
                w = -w
            form = plus(form, scaled(self.v01(ref, i), w))
        return form

    def sum01(self, ref: Source, indices: Sequence[int] | None = None) -> Form:
        """The number of set bits (members) among `indices` (all by default)."""
        ref = as_ref(ref)
        idx = range(len(ref)) if indices is None else indices
        return plus(*(self.v01(ref, i) for i in idx))

    def equals(self, ref: Source, value: int) -> tuple[Form, float]:
        """(form, n): form == n exactly when the +-1 bits of `ref` spell `value`, else the
        form is at most n - 2."""
        ds = self.d(ref)
        return {d: (1.0 if value >> i & 1 else -1.0) for i, d in enumerate(ds)}, float(len(ds))

    def const(self, c: float) -> Form:
        return {self.one: float(c)}

    def step(self, form: Form, t: float, out: Form, when: Sequence[Form] = (),
             big: float = SMALL, name: str = "cond") -> None:
        """out += coeff * [form >= t and every 0/1 form in `when` is 1]."""
        f = plus(form, *(scaled(w, big) for w in when), {self.one: -big * len(when)})
        step(self.mlp, f, t, out, self.one, name=name)

    def linear(self, up: Form, out: Form) -> None:
        """out += coeff * up exactly (silu(32) = 32)."""
        self.mlp.unit({self.one: 32.0}, up, scaled(out, 1.0 / 32))

    def product(self, a01: Form, b: Form, out: Form) -> None:
        """out += coeff * a * b for a 0/1 form a (bilinear SwiGLU, exact)."""
        product(self.mlp, a01, b, out, self.one, a_bound=1.0)

    def constant(self, out: Form) -> None:
        self.mlp.constant(out, self.one)


Body = Callable[[Ctx, list[list[int]]], None]


def unit(c: Circuit, name: str, args: Sequence[Source],
         outputs: Sequence[tuple], body: Body, **params) -> list[Signal]:
    """A machine unit: outputs (name, BITS | ONEHOT, width) initialised to -1 bits / the
    none member, or (name, RAW, width, scale): tiny values starting at 0 whose magnitude
    the body keeps at most `scale` (the norm ledger counts width * scale^2); then
    `body(ctx, out_dims)` adds its conditions."""
    specs = []
    for oname, kind, width, *scale in outputs:
        extra = ({"members": width, "has_none": True} if kind == ONEHOT
                 else {"scale": scale[0]} if kind == RAW else {})
        specs.append((oname, kind, width + (1 if kind == ONEHOT else 0), extra))

    def emit(mlp, dims, one, outs):
        ctx = Ctx(mlp, dims, one)
        out_dims = [dims(s.ref) for s in outs]
        init: Form = {}
        for sig, ds in zip(outs, out_dims, strict=True):
            if sig.kind == BITS:
                init.update({d: -1.0 for d in ds})
            elif sig.kind == ONEHOT:
                init[ds[-1]] = 1.0
        if init:
            ctx.constant(init)
        body(ctx, out_dims)

    return make_unit(c, name, "machine", [as_ref(a) for a in args], specs, emit, **params)


def true_bit(dim: int) -> Form:
    """What a true condition adds to a BITS output dim."""
    return {dim: 2.0}


def true_member(dims: list[int], m: int) -> Form:
    """What a true condition adds to member m of a ONEHOT output (none is the last dim)."""
    return {dims[m]: 1.0, dims[-1]: -1.0}


def members(ref: Ref) -> int:
    return ref.signal.members if ref.kind == ONEHOT else len(ref)


def gated(ctx: Ctx, gate: Form, on: float, up: Form, out: Form, name: str = "gated") -> None:
    """out += coeff * up when the integer form `gate` equals `on`, else exactly 0. The
    caller guarantees gate <= on for every input (a sum of 0/1 conditions, on = their
    number): the unit's gate gain * (gate - on + 1/2) is gain/2 (silu is the identity)
    when on and <= -gain/2 (silu is -0) otherwise. One unit; recorded as a threshold
    (offset 1/2) for the margin report."""
    g = plus(scaled(gate, STEP_GAIN), ctx.const(STEP_GAIN * (0.5 - on)))
    u = ctx.mlp.unit(g, up, scaled(out, 2.0 / STEP_GAIN))
    ctx.mlp.thresholds.append(Threshold(ctx.mlp.layer, u, gate, on, STEP_GAIN, 0.5, name))
