"""circuit.units: constructors of MLP units (the `Unit` nodes of the IR).

Each constructor adds a `Unit` to a circuit and returns its fresh output signals. A unit
carries an `emit(mlp, dims, one)` closure that writes it through the exact primitives of
`primitives.mlp` (so every threshold it places is recorded for the margin report), and
its cost in SwiGLU units, counted once by a dry run of that closure.

Every output has a fixed sum of squares (bits are +-1, one-hots have exactly one hot), so
the norm ledger stays exact whatever the data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from qgpu.circuit.ir import BITS, ONEHOT, Circuit, Ref, Signal, Source, as_ref, make_unit
from qgpu.primitives import CircuitError, Form, plus, scaled
from qgpu.primitives.mlp import (
    adder,
    bit01,
    bit_from_step,
    one_hot_decoder,
    product,
)
from qgpu.primitives.mlp import compare as compare_units

Dims = Callable[[Ref], list[int]]


def _bits(ref: Source, what: str, width: int | None = None) -> Ref:
    ref = as_ref(ref)
    if ref.kind != BITS:
        raise CircuitError(f"{what}: {ref.describe()} is {ref.kind}, not bits")
    if width is not None and len(ref) != width:
        raise CircuitError(f"{what}: {ref.describe()} has {len(ref)} bits, needs {width}")
    return ref


def zero_one(ref: Ref, dims: Dims, one: int) -> Form:
    """The 0/1 value of a single bit (+-1) or one-hot member (0/1) as a form."""
    (d,) = dims(ref)
    return bit01(d, one) if ref.kind == BITS else {d: 1.0}


# -- arithmetic and logic --
def add(c: Circuit, a: Source, b: Source, *, carry_in: Source | None = None,
        carry_out: bool = False, name: str) -> tuple[Signal, Signal | None]:
    """(a + b + carry_in) mod 2^n as bits (n <= 16), and the carry out bit if asked."""
    a, b = _bits(a, name), _bits(b, name, len(as_ref(a)))
    cin = None if carry_in is None else _bits(carry_in, f"{name} carry in", 1)

    def emit(mlp, dims, one, outs):
        cin_form = None if cin is None else zero_one(cin, dims, one)
        cout = dims(outs[1].ref)[0] if carry_out else None
        adder(mlp, dims(a), dims(b), dims(outs[0].ref), one, carry_in=cin_form, carry_out=cout)

    outs = [(name, BITS, len(a), {})] + ([(f"{name}.carry", BITS, 1, {})] if carry_out else [])
    sigs = make_unit(c, name, "add", [a, b] + ([cin] if cin else []), outs, emit)
    total = sigs[0]
    carry = sigs[1] if carry_out else None
    return total, carry


def compare(c: Circuit, a: Source, b: Source, *, signed: bool = False,
            name: str) -> tuple[Signal, Signal]:
    """Bits ge = [A >= B] and eq = [A == B] (n <= 16)."""
    a, b = _bits(a, name), _bits(b, name, len(as_ref(a)))

    def emit(mlp, dims, one, outs):
        compare_units(mlp, dims(a), dims(b), one, ge=dims(outs[0].ref)[0], eq=dims(outs[1].ref)[0],
                      signed=signed)

    ge, eq = make_unit(c, name, "compare", [a, b], [(f"{name}.ge", BITS, 1, {}),
                                                    (f"{name}.eq", BITS, 1, {})],
                       emit, signed=signed)
    return ge, eq


def decode(c: Circuit, bits: Source, *, name: str) -> Signal:
    """Bits (value v) -> one-hot with 2^n members, member v hot (no none member)."""
    bits = _bits(bits, name)
    n = len(bits)

    def emit(mlp, dims, one, outs):
        one_hot_decoder(mlp, dims(bits), dims(outs[0].ref), one)

    (out,) = make_unit(c, name, "decode", [bits],
                       [(name, ONEHOT, 2 ** n, {"members": 2 ** n, "has_none": False})], emit)
    return out


def mux(c: Circuit, selector: Source, arms: Sequence[Source], *, name: str) -> Signal:
    """Bits equal to arms[m] where member m of the one-hot `selector` is hot (the none
    member, if any, selects the last arm)."""
    sel = as_ref(selector)
    if sel.kind != ONEHOT or len(sel) != sel.signal.width:
        raise CircuitError(f"{name}: selector {sel.describe()} is not a whole one-hot group")
    if len(arms) != sel.signal.width:
        raise CircuitError(f"{name}: {len(arms)} arms for {sel.signal.width} selector dims")
    arms = [_bits(a, f"{name} arm", len(as_ref(arms[0]))) for a in arms]

    def emit(mlp, dims, one, outs):
        for s, arm in zip(dims(sel), arms, strict=True):
            for src, dst in zip(dims(arm), dims(outs[0].ref), strict=True):
                product(mlp, {src: 1.0}, {s: 1.0}, {dst: 1.0}, one, a_bound=1.0)

    (out,) = make_unit(c, name, "mux", [sel, *arms], [(name, BITS, len(arms[0]), {})], emit)
    return out


def mux2(c: Circuit, cond: Source, if_true: Source, if_false: Source, *, name: str) -> Signal:
    """Bits: if_true where the bit `cond` is +1, else if_false. Per bit
    out = (t + f) / 2 + cond * (t - f) / 2: a product and a linear unit."""
    cond = _bits(cond, f"{name} condition", 1)
    t = _bits(if_true, name)
    f = _bits(if_false, name, len(t))

    def emit(mlp, dims, one, outs):
        (cd,) = dims(cond)
        for td, fd, od in zip(dims(t), dims(f), dims(outs[0].ref), strict=True):
            product(mlp, {cd: 1.0}, {td: 1.0, fd: -1.0}, {od: 0.5}, one, a_bound=1.0)
            mlp.unit({one: 32.0}, {td: 1.0, fd: 1.0}, {od: 1.0 / 64})

    (out,) = make_unit(c, name, "mux2", [cond, t, f], [(name, BITS, len(t), {})], emit)
    return out


def threshold(c: Circuit, terms: Sequence[tuple[Source, float]], at: float, *,
              constant: float = 0.0, name: str) -> Signal:
    """A bit: +1 where sum(coeff * value) + constant >= at, for integer-valued sums
    (bits count as their 0/1 value, one-hot members as 0/1)."""
    refs = [as_ref(r) for r, _ in terms]
    for r in refs:
        if len(r) != 1 or r.kind not in (BITS, ONEHOT):
            raise CircuitError(f"{name}: term {r.describe()} is not a single bit or member")

    def emit(mlp, dims, one, outs):
        form = plus({one: constant}, *(scaled(zero_one(r, dims, one), k)
                                       for r, (_, k) in zip(refs, terms, strict=True)))
        bit_from_step(mlp, form, at, dims(outs[0].ref)[0], one, name=name)

    (out,) = make_unit(c, name, "threshold", refs, [(name, BITS, 1, {})], emit,
                       coeffs=[float(k) for _, k in terms], at=float(at),
                       constant=float(constant))
    return out


def all_of(c: Circuit, bits: Sequence[Source], *, name: str) -> Signal:
    """AND of single bits."""
    return threshold(c, [(b, 1.0) for b in bits], float(len(bits)), name=name)


def any_of(c: Circuit, bits: Sequence[Source], *, name: str) -> Signal:
    """OR of single bits."""
    return threshold(c, [(b, 1.0) for b in bits], 1.0, name=name)


def negate(c: Circuit, bit: Source, *, name: str) -> Signal:
    """NOT of a bit: -x, one linear unit."""
    bit = _bits(bit, name)

    def emit(mlp, dims, one, outs):
        for src, dst in zip(dims(bit), dims(outs[0].ref), strict=True):
            mlp.unit({one: 32.0}, {src: 1.0}, {dst: -1.0 / 32})

    (out,) = make_unit(c, name, "not", [bit], [(name, BITS, len(bit), {})], emit)
    return out


def equals(c: Circuit, bits: Source, value: int, *, name: str) -> Signal:
    """A bit: +1 where the bits spell `value`."""
    bits = _bits(bits, name)
    n = len(bits)

    def emit(mlp, dims, one, outs):
        form = {d: (1.0 if value >> i & 1 else -1.0) for i, d in enumerate(dims(bits))}
        bit_from_step(mlp, form, float(n), dims(outs[0].ref)[0], one, name=f"{name} == {value}")

    (out,) = make_unit(c, name, "equals", [bits], [(name, BITS, 1, {})], emit, value=value)
    return out

