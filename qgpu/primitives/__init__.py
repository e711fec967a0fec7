"""primitives: exact weight primitives, written straight into Qwen3.5 layer weights (the
compiler's instruction set): this module holds the conventions they share, `MlpWriter`
(hands out the SwiGLU units of one layer) and `Threshold`; mlp (exact SwiGLU steps and
products), gdn_memory (Gated DeltaNet heads as storage), norm (the norm ledger).

Owns: writing exact units and heads into weights. May import: model (the weights and layer
math it writes for), errors. Imported by circuit (the compiler core), examples, merge.

Conventions (every primitive relies on them; the norm ledger keeps them true):
- The residual stream is read *unscaled*: every RMSNorm is an exact identity because the
  compiler keeps mean(h^2) at a known power of 4 and sets the norm weight to
  sqrt(mean) - 1 (see primitives.norm). A projection therefore sees the residual values.
- A `Form` is a linear form over residual dimensions, {dim: coefficient}; constants are
  coefficients on the constant dimension `one`, which always holds 1.
- Signals: a *bit* is a dimension holding -1 or +1; a *one-hot* group holds 1 in one
  dimension and 0 in the others (or all 0: "none").
- Coefficients are small dyadic numbers and values small integers, so every sum a
  primitive forms is exact in float32 (|values| < 2^24).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qgpu.errors import QgpuError
from qgpu.model.weights import QwenWeights

Form = dict[int, float]


class CircuitError(QgpuError):
    """A primitive that cannot be placed: out of units, heads or rows; bad operands."""


def scaled(form: Form, factor: float) -> Form:
    return {d: c * factor for d, c in form.items()}


def plus(*forms: Form) -> Form:
    out: Form = {}
    for form in forms:
        for d, c in form.items():
            out[d] = out.get(d, 0.0) + c
    return {d: c for d, c in out.items() if c != 0}


@dataclass
class Threshold:
    """A step placed in a layer: gate of unit `unit` is gain * (form - threshold + offset).
    Recorded so an instrumented run can measure its margin (primitives.norm)."""

    layer: int
    unit: int
    form: Form
    threshold: float
    gain: float
    offset: float
    name: str


@dataclass
class MlpWriter:
    """Allocates SwiGLU units of layer `layer` in `weights`, first free unit first.

    A unit u contributes down[:, u] * silu(gate[u] . h) * (up[u] . h) to the residual.
    """

    weights: QwenWeights
    layer: int
    next_unit: int = 0
    thresholds: list[Threshold] = field(default_factory=list)

    def _row(self, name: str) -> np.ndarray:
        return self.weights.layer(self.layer, f"mlp.{name}.weight")

    def unit(self, gate: Form, up: Form, down: Form) -> int:
        size = self.weights.config.intermediate_size
        if self.next_unit >= size:
            raise CircuitError(f"layer {self.layer}: all {size} MLP units are in use")
        u = self.next_unit
        self.next_unit += 1
        gate_w, up_w, down_w = self._row("gate_proj"), self._row("up_proj"), self._row("down_proj")
        for d, c in gate.items():
            gate_w[u, d] = c
        for d, c in up.items():
            up_w[u, d] = c
        for d, c in down.items():
            down_w[d, u] = c
        return u

    def constant(self, out: Form, one: int, gain: float = 128.0) -> None:
        """Adds the constant coefficients of `out` to their dimensions, exactly:
        silu(gain) = gain for gain >= 16.64, times 1, times coeff / gain."""
        self.unit({one: gain}, {one: 1.0}, scaled(out, 1.0 / gain))
