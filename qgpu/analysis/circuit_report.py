"""analysis.circuit_report: an instrumented run of a compiled circuit on the reference engine that
measures what exactness rests on:
- thresholds: for every step the compiler placed, the smallest ratio of its tolerance
  (how far its input may stray with the off side still exactly 0: 0.25 - 88.73 / gain)
  to the deviation actually seen (inf when every input was ideal). The deviation of an
  input on the on side (>= t - 1/2) is its distance to the nearest integer (the on side
  passes it through); on the off side, how far it lies above t - 1, the highest ideal
  off input (inputs further below are safer still: a counter's F = 2^-k is ideal);
- norms: every RMSNorm input (each layer's input, after its mixer, and the final
  residual) has mean square exactly the ledger's value, so each norm was the identity;
- signals: at every layer's input every live signal holds an ideal value (bits exactly
  +-1, one-hots 0/1 with exactly one hot, raw table reads exactly 0 or +-scale, counter
  reads 0 or scale * 2^-n);
- logits: all exact integers, and the smallest gap between the chosen token and the next.
`threshold_report` measures the thresholds alone for weights written with the primitives
directly (no compiled circuit).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from qgpu.circuit.ir import BITS, CONST, ONEHOT, RAW, Counter, Unit
from qgpu.model import layers
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import QwenWeights
from qgpu.primitives import Threshold


@dataclass
class CircuitReport:
    positions: int
    evaluations: int  # threshold evaluations
    min_ratio: float  # tolerance / deviation over every threshold (inf: all exact)
    max_deviation: float
    worst: str
    norms_checked: int
    norm_failures: int
    signal_failures: list[str]
    min_logit_gap: float
    logits_integral: bool

    @property
    def exact(self) -> bool:
        return (self.norm_failures == 0 and not self.signal_failures and self.logits_integral
                and self.min_ratio >= 1e3)

    def __str__(self) -> str:
        ratio = "inf (every threshold input exact)" if math.isinf(self.min_ratio) else \
            f"{self.min_ratio:.3g} at {self.worst}"
        return (f"{self.positions} positions: {self.evaluations} threshold evaluations, max "
                f"deviation {self.max_deviation:.3g}, min margin ratio {ratio}; "
                f"{self.norms_checked} norms, {self.norm_failures} not exact; "
                f"{len(self.signal_failures)} signal failures; logits integral: "
                f"{self.logits_integral}, min gap {self.min_logit_gap:g}")


def _ideal(sig, values: np.ndarray, counter: bool, grid: float | None = None) -> bool:
    if sig.kind == BITS:
        return bool(np.all(np.abs(values) == 1))
    if sig.kind == ONEHOT:
        return bool(np.all((values == 0) | (values == 1)) and np.all(values.sum(1) == 1))
    if sig.kind == CONST:
        return bool(np.all(values == np.asarray(sig.values, np.float32)))
    if sig.kind == RAW and counter:
        ratio = np.abs(values[values != 0]) / sig.scale
        return bool(np.all(np.log2(ratio) == np.round(np.log2(ratio))) and np.all(ratio <= 1))
    if sig.kind == RAW and grid is not None:
        v = values.astype(np.float64)
        return bool(np.all(np.abs(v) <= sig.scale) and np.all(v / grid == np.round(v / grid)))
    return bool(np.all((values == 0) | (np.abs(values) == np.float32(sig.scale))))


def circuit_report(compiled, tokens, mode: str = "recurrent",
                   raw_grid: Callable[[str], float | None] | None = None) -> CircuitReport:
    """raw_grid: the granularity of a RAW unit output by name (None: held to the table
    reads' ideal, 0 or +-scale), e.g. analysis.suite_margins.machine_raw_grid."""
    plan, w = compiled.plan, compiled.weights
    seen: dict[tuple[int, str], list[np.ndarray]] = {}

    def observe(layer, site, value):
        seen.setdefault((layer, site), []).append(np.array(value))

    engine = ReferenceEngine(w, observer=observe)
    logits = engine.prefill(engine.new_state(), tokens, mode=mode)

    def get(layer, site):
        return np.concatenate(seen[(layer, site)])

    mean = np.float32(plan.mean)
    norms, norm_failures, signal_failures = 0, 0, []
    counters = {n.outputs[0] for n in plan.order if isinstance(n, Counter)}
    final = None
    for layer in range(plan.n_layers):
        h = get(layer, "residual_in")
        h1 = h + get(layer, "mixer_out")
        final = h1 + get(layer, "mlp_out")
        for x in (h, h1):
            norms += x.shape[0]
            norm_failures += int(np.sum(layers.mean_square(x)[:, 0] != mean))
        if not np.array_equal(get(layer, "mlp_in"), h1):
            norm_failures += 1
        for piece in plan.live_at(2 * layer + 1):
            sig = piece.signal
            grid = (raw_grid(sig.name) if raw_grid and sig.kind == RAW
                    and isinstance(sig.producer, Unit) else None)
            if not _ideal(sig, h[:, plan.ref_dims(piece)], sig in counters, grid):
                signal_failures.append(f"{piece.describe()} at layer {layer}")
    norms += final.shape[0]
    norm_failures += int(np.sum(layers.mean_square(final)[:, 0] != mean))

    count, min_ratio, max_dev, worst = 0, math.inf, 0.0, ""
    for th in compiled.thresholds:
        pre = get(th.layer, "mlp_gate")[:, th.unit].astype(np.float64)
        form = pre / th.gain + th.threshold - th.offset
        on = form >= th.threshold - 0.5
        excess = np.where(on, np.abs(form - np.round(form)),
                          np.maximum(0.0, form - (th.threshold - 1)))
        dev = float(np.max(excess, initial=0.0))
        count += pre.size
        ratio = (0.25 - 88.73 / th.gain) / dev if dev > 0 else math.inf
        max_dev = max(max_dev, dev)
        if ratio < min_ratio:
            min_ratio, worst = ratio, th.name
    top2 = np.sort(logits, axis=1)[:, -2:]
    gap = float(np.min(top2[:, 1] - top2[:, 0])) if len(tokens) else math.inf
    return CircuitReport(len(tokens), count, min_ratio, max_dev, worst, norms, norm_failures,
                         signal_failures, gap, bool(np.all(logits == np.round(logits))))


@dataclass
class ThresholdReport:
    evaluations: int
    min_ratio: float  # tolerance / deviation, inf when every input was an exact integer
    max_deviation: float
    worst: Threshold | None

    def __str__(self) -> str:
        where = f" at {self.worst.name} (layer {self.worst.layer})" if self.worst else ""
        return (f"{self.evaluations} threshold evaluations, max deviation "
                f"{self.max_deviation:.3g}, min margin ratio {self.min_ratio:.3g}{where}")


def threshold_report(weights: QwenWeights, thresholds: list[Threshold], tokens,
                  mode: str = "recurrent") -> ThresholdReport:
    """Run `tokens` through the reference engine and measure every step in `thresholds`
    (weights written by the primitives directly, without the compiler's IR: the smallest
    ratio of a step's tolerance to the deviation of its input from the ideal integer)."""
    gates: dict[int, list[np.ndarray]] = {}

    def observe(layer, site, value):
        if site == "mlp_gate":
            gates.setdefault(layer, []).append(value)

    engine = ReferenceEngine(weights, observer=observe)
    engine.prefill(engine.new_state(), tokens, mode=mode)
    count, worst, min_ratio, max_dev = 0, None, math.inf, 0.0
    for th in thresholds:
        pre = np.concatenate(gates.get(th.layer, []))[:, th.unit].astype(np.float64)
        form = pre / th.gain + th.threshold - th.offset
        dev = np.abs(form - np.round(form))
        tolerance = 0.25 - 88.73 / th.gain
        count += dev.size
        top = float(dev.max(initial=0.0))
        ratio = tolerance / top if top > 0 else math.inf
        if top > max_dev:
            max_dev = top
        if ratio < min_ratio:
            min_ratio, worst = ratio, th
    return ThresholdReport(count, min_ratio, max_dev, worst)
