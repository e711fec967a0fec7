"""primitives.norm: norm bookkeeping.

Norm bookkeeping (docs/design.md section 3): when every residual slot holds a value of fixed
magnitude (+-1 bits, the constant 1, ballast), the sum of squares of the residual does not
depend on the data. `NormLedger` pads it with four ballast dimensions (Lagrange: any
integer is a sum of four squares) so that mean(h^2) is exactly `mean` (a power of 4,
>= 64), where rsqrt(mean + eps) is an exact power of two; with every norm weight set to
sqrt(mean) - 1 each RMSNorm is then the exact identity, so weights read raw values.
When a layer adds or removes slots, `rebalance` emits constant MLP units that move the
ballast to a new decomposition, keeping the mean exact for the next layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from qgpu.model import layers
from qgpu.model.weights import FINAL_NORM, QwenWeights
from qgpu.primitives import CircuitError, MlpWriter


def four_squares(n: int) -> tuple[int, int, int, int]:
    """Four non-negative integers whose squares sum to n (largest first)."""
    if n < 0:
        raise CircuitError(f"cannot write {n} as a sum of squares")
    for a in range(math.isqrt(n), -1, -1):
        ra = n - a * a
        for b in range(min(a, math.isqrt(ra)), -1, -1):
            rb = ra - b * b
            for c in range(min(b, math.isqrt(rb)), -1, -1):
                d2 = rb - c * c
                d = math.isqrt(d2)
                if d * d == d2 and d <= c:
                    return a, b, c, d
    raise CircuitError(f"no four-square decomposition of {n}")  # unreachable (Lagrange)


@dataclass
class NormLedger:
    """Keeps mean(h^2) == mean exactly; `one` holds 1, `ballast` are four spare dims."""

    hidden: int
    one: int
    ballast: list[int]
    mean: int = 64
    ballast_now: tuple[int, int, int, int] = field(default=(0, 0, 0, 0))
    row_sumsq: int | None = None  # every embedding row must carry the same data sumsq

    def __post_init__(self):
        root = math.isqrt(self.mean)
        if root * root != self.mean or root & (root - 1) or self.mean < 64:
            raise CircuitError(f"mean square {self.mean} is not a power of 4 >= 64")
        if len(self.ballast) != 4:
            raise CircuitError("the ledger needs exactly four ballast dimensions")

    @property
    def norm_weight(self) -> float:
        """(1 + w) * rsqrt(mean) == 1 exactly."""
        return math.isqrt(self.mean) - 1.0

    def ballast_for(self, data_sumsq: int) -> tuple[int, int, int, int]:
        """Ballast values making the total sum of squares mean * hidden."""
        deficit = self.mean * self.hidden - int(data_sumsq)
        if deficit < 0:
            raise CircuitError(f"data sum of squares {data_sumsq} exceeds {self.mean} * "
                               f"{self.hidden}: raise the mean to the next power of 4")
        return four_squares(deficit)

    def embedding_row(self, values: dict[int, float], uniform: bool = True) -> np.ndarray:
        """An embedding row with the constant 1, `values`, and ballast for exact norms.
        `uniform` rows must all carry the same sum of squares (what `rebalance` needs)."""
        row = np.zeros(self.hidden, np.float32)
        row[self.one] = 1.0
        for d, v in values.items():
            row[d] = v
        sumsq = int(np.sum(row.astype(np.float64) ** 2))
        if uniform and self.row_sumsq is not None and sumsq != self.row_sumsq:
            raise CircuitError(f"embedding row has sum of squares {sumsq}, others "
                               f"{self.row_sumsq}: pad it so the norm stays data-independent")
        ballast = self.ballast_for(sumsq)
        if uniform:
            self.row_sumsq, self.ballast_now = sumsq, ballast
        row[self.ballast] = ballast
        return row

    def rebalance(self, mlp: MlpWriter, data_sumsq: int) -> None:
        """Constant units moving the ballast so that the residual after this MLP, whose
        non-ballast sum of squares will be `data_sumsq`, again has mean square `mean`."""
        new = self.ballast_for(data_sumsq)
        delta = {d: float(n - o) for d, n, o in zip(self.ballast, new, self.ballast_now,
                                                     strict=True) if n != o}
        if delta:
            mlp.constant(delta, self.one)
        self.ballast_now = new

    def set_norm_weights(self, weights: QwenWeights) -> None:
        """Every RMSNorm of the model (input, post-mixer, final) becomes the identity."""
        for name in weights.tensors:
            if name.endswith("layernorm.weight") or name == FINAL_NORM:
                weights.tensors[name][:] = self.norm_weight

    def is_identity(self, h: np.ndarray) -> bool:
        """Does rms_norm leave these residual rows bit-unchanged?"""
        w = np.full(self.hidden, self.norm_weight, np.float32)
        return bool(np.array_equal(layers.rms_norm(h, w, 1e-6), h))
