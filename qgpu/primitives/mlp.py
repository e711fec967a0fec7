"""primitives.mlp: exact SwiGLU units (docs/design.md section 3).

Every function adds units through an `MlpWriter`, reads `Form`s of the residual and adds
its result to output dimensions (fresh dimensions hold 0, so adding writes them).

Exactness: for integer-valued input forms the outputs are exact integers:
- `step` uses a pair of units gain*(L - t + 0.75) and gain*(L - t + 0.25). For integer L
  both are >= gain/4 >= 16.64 when L >= t (silu is the identity there, the difference is
  exactly gain/2) and both are <= -gain/4 <= -88.73 when L <= t - 1 (silu is exactly -0).
  gain = 1024 also keeps the "off" side exactly 0 for inputs off the integers by up to
  0.163 (reads from a GDN table carry ~1e-7); the "on" side then carries that deviation
  (the margin report measures it). The output coefficient/(gain/2) must be dyadic.
- `product`: silu(a + C) * b - silu(C) * b = a*b exactly when a + C >= 16.64 for every a
  (C = 32 + max|a|) and the products stay below 2^24.
"""

from __future__ import annotations

from qgpu.primitives import CircuitError, Form, MlpWriter, Threshold, plus, scaled

STEP_GAIN = 1024.0  # >= 4 * 88.73: the off side saturates at 0 with room for deviations


def step(mlp: MlpWriter, form: Form, threshold: float, out: Form, one: int,
         gain: float = STEP_GAIN, name: str = "step") -> None:
    """out += coeff * [form >= threshold] for integer-valued forms."""
    if gain < 4 * 88.73:
        raise CircuitError(f"step gain {gain} is below 355: its off side would not be 0")
    units = []
    for offset in (0.75, 0.25):
        gate = plus(scaled(form, gain), {one: gain * (offset - threshold)})
        sign = 1.0 if offset == 0.75 else -1.0
        units.append(mlp.unit(gate, {one: 1.0}, scaled(out, sign * 2.0 / gain)))
        mlp.thresholds.append(Threshold(mlp.layer, units[-1], form, threshold, gain, offset,
                                        name))


def bit_from_step(mlp: MlpWriter, form: Form, threshold: float, out_dim: int, one: int,
                  name: str = "bit") -> None:
    """out_dim += +1 if form >= threshold else -1 (a +-1 bit into a fresh dimension)."""
    step(mlp, form, threshold, {out_dim: 2.0}, one, name=name)
    mlp.constant({out_dim: -1.0}, one)


def product(mlp: MlpWriter, a: Form, b: Form, out: Form, one: int, a_bound: float) -> None:
    """out += coeff * (a * b) where |a| <= a_bound always (bilinear SwiGLU)."""
    c = 32.0 + float(a_bound)
    mlp.unit(plus(a, {one: c}), b, out)
    mlp.unit({one: c}, b, scaled(out, -1.0))


def select(mlp: MlpWriter, selector: Form, value: Form, out: Form, one: int,
           value_bound: float) -> None:
    """out += selector * value, for a 0/1 selector: a mux arm. Several arms with a
    one-hot selector make a multiplexer."""
    product(mlp, value, selector, out, one, value_bound)


def bit01(bit_dim: int, one: int) -> Form:
    """The 0/1 value of a +-1 bit: (x + 1) / 2."""
    return {bit_dim: 0.5, one: 0.5}


def one_hot_decoder(mlp: MlpWriter, bits: list[int], outputs: list[int], one: int) -> None:
    """outputs[v] += 1 exactly when the +-1 bits (bit 0 first) spell v, else 0."""
    if len(outputs) > 2 ** len(bits):
        raise CircuitError(f"{len(outputs)} outputs for {len(bits)} bits")
    for value, out in enumerate(outputs):
        signs = {b: (1.0 if value >> i & 1 else -1.0) for i, b in enumerate(bits)}
        step(mlp, signs, float(len(bits)), {out: 1.0}, one, name=f"decode={value}")


def _partial_sum(a: list[int], b: list[int], j: int, one: int, carry_in: Form | None) -> Form:
    """S_j = sum_{i<=j} 2^i (a_i + b_i) (+ carry_in) as a form over +-1 bits."""
    form: Form = {}
    for i in range(j + 1):
        form = plus(form, scaled(bit01(a[i], one), 2.0 ** i), scaled(bit01(b[i], one), 2.0 ** i))
    return plus(form, carry_in or {})


def adder(mlp: MlpWriter, a: list[int], b: list[int], out: list[int], one: int,
          carry_in: Form | None = None, carry_out: int | None = None) -> None:
    """out = (a + b + carry_in) mod 2^n as +-1 bits (bit 0 first), n <= 16 so every
    partial sum stays an exact integer; optionally carry_out (+-1) into a fresh dim.
    Bit j is a sawtooth of S_j: [S_j >= 2^j] - [S_j >= 2^(j+1)] + [S_j >= 3*2^j]."""
    n = len(a)
    if not (len(b) == len(out) == n) or n > 16:
        raise CircuitError(f"adder needs equal widths <= 16, got {len(a)}, {len(b)}, {len(out)}")
    for j in range(n):
        s = _partial_sum(a, b, j, one, carry_in)
        for k, sign in ((1, 2.0), (2, -2.0), (3, 2.0)):  # out bit is 2*bit - 1
            step(mlp, s, float(k * 2 ** j), {out[j]: sign}, one, name=f"add bit {j}")
        mlp.constant({out[j]: -1.0}, one)
    if carry_out is not None:
        bit_from_step(mlp, _partial_sum(a, b, n - 1, one, carry_in), float(2 ** n), carry_out,
                      one, name="carry")


def add32(low: MlpWriter, high: MlpWriter, a: list[int], b: list[int], out: list[int],
          carry: int, one: int) -> None:
    """32-bit add over two layers: the low halves and the carry in `low`, the high halves
    with the carry as input in `high` (a later layer). Partial sums stay below 2^17."""
    if len(a) != 32 or len(b) != 32 or len(out) != 32:
        raise CircuitError("add32 needs 32-bit operands and result")
    if high.layer <= low.layer:
        raise CircuitError("add32: the high half must be placed in a later layer than the low")
    adder(low, a[:16], b[:16], out[:16], one, carry_out=carry)
    adder(high, a[16:], b[16:], out[16:], one, carry_in=bit01(carry, one))


def difference(a: list[int], b: list[int], one: int, signed: bool = False) -> Form:
    """A - B as a form over +-1 bits (bit 0 first), |A - B| < 2^n: exact for n <= 16.
    Signed: the top bit weighs -2^(n-1)."""
    n = len(a)
    form: Form = {}
    for i in range(n):
        weight = -(2.0 ** i) if signed and i == n - 1 else 2.0 ** i
        form = plus(form, scaled(bit01(a[i], one), weight), scaled(bit01(b[i], one), -weight))
    return form


def compare(mlp: MlpWriter, a: list[int], b: list[int], one: int, *, ge: int | None = None,
            eq: int | None = None, signed: bool = False) -> None:
    """+-1 bits into fresh dims: ge = [A >= B], eq = [A == B] (n <= 16 bits)."""
    if len(a) != len(b) or len(a) > 16:
        raise CircuitError("compare needs equal widths <= 16")
    d = difference(a, b, one, signed)
    if ge is not None:
        bit_from_step(mlp, d, 0.0, ge, one, name="ge")
    if eq is not None:  # [D >= 0] - [D >= 1], as +-1
        step(mlp, d, 0.0, {eq: 2.0}, one, name="eq lo")
        step(mlp, d, 1.0, {eq: -2.0}, one, name="eq hi")
        mlp.constant({eq: -1.0}, one)
