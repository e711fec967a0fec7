"""analysis.margins: the fast instrumented run (docs/design.md section 3, "no drift"): a compiled
circuit's whole token sequence (teacher-forced: prompt and expected trace as one
sequence) through the fast engine's numpy backend with an observer, in chunks of
positions, measuring what exactness rests on at every position and layer.

- thresholds: every step the compiler recorded (`compiled.thresholds`). A step's gate is
  gain * (form - t + offset) (offsets 0.75 / 0.25 for a step's pair, 1/2 for a gated
  unit); its input `form = pre / gain + t - offset` is read back from the fp32 gate
  pre-activation the engine computed. Ideally the form is an integer: on the on side
  (form >= t - 1/2) the deviation is |form - round(form)|, on the off side how far it
  lies above t - 1 (inputs further below are safer still: a counter's 2^-k < 1 is
  ideal). The margin is how far the input may stray from t (on) or t - 1 (off) with the
  unit still exact: silu(gate) == gate on the on side (gate >= SILU_ID, the smallest
  fp32 from which silu is the identity) and silu(gate) == 0 on the off side (gate <=
  SILU_ZERO): offset - SILU_ID / gain on, 1 - offset + SILU_ZERO / gain off (0.1633 for
  the pair's 0.75 unit off, 0.2338 for its 0.25 unit on, 0.41 / 0.48 for gated units).
  `ratio` is the smallest margin over the largest deviation (worst case of both), and
  `min_eval_ratio` the smallest margin / deviation of one evaluation.
- signals: every signal live at an MLP's input (after the mixer, so the table reads are
  in) against its ideal values: bits +-1, one-hots 0/1 (one hot), constants, table reads
  0 or +-scale (deviation in units of scale), counter reads scale * 2^-n (relative),
  RAW unit outputs integer multiples of their `raw_grid` granularity (signals without a
  grid are listed as unchecked, not as exact);
- norms: the residual's mean square before each mixer and MLP is the ledger's value
  exactly, and the MLP's normed input equals the residual (the norm was the identity);
- logits: integral, the smallest top-1 / top-2 gap, and teacher forcing's check that the
  argmax at every position from the prompt's last token on is the next expected token
  (the deviations measured are those of the run that writes the right trace).

The numpy backend computes the native kernel's function with the same float32 formulas
(bit-identical where every sum is exact; summation order may differ elsewhere), so what
it measures is the deviation of the arithmetic that the model runs, not of a float64
shadow; its sparse products are scipy's CSR products, the native kernel's sequential
order (model.sparse.SparseRows), which makes a 12,000-token launch take minutes. ReferenceEngine +
report.circuit_report measures the same on dense weights (slow).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from qgpu.circuit.ir import BITS, CONST, ONEHOT, RAW, Counter, Table
from qgpu.model import layers
from qgpu.model.fast_numpy import NumpyFastEngine

F32 = np.float32
CHUNK = 256  # positions per engine call (memory: a few [CHUNK, hidden] arrays)


def _silu_bounds() -> tuple[float, float]:
    """(SILU_ID, SILU_ZERO): the smallest fp32 x with silu(y) == y for every fp32 y >= x
    in [x, 64], and the largest x with silu(y) == 0 for every fp32 y in [-128, x];
    computed from the engines' own silu (model.layers), not assumed."""
    def run(lo: float, hi: float) -> np.ndarray:
        bits = np.arange(np.array(lo, F32).view(np.int32), np.array(hi, F32).view(np.int32),
                         dtype=np.int32)
        return bits.view(F32)

    pos = run(8.0, 64.0)
    bad = np.flatnonzero(layers.silu(pos) != pos)
    silu_id = float(pos[bad[-1] + 1])
    neg = -run(64.0, 128.0)[::-1]  # -128 .. -64, ascending
    neg = np.concatenate([neg, -run(8.0, 64.0)[::-1]])
    nonzero = np.flatnonzero(layers.silu(neg) != 0)
    silu_zero = float(neg[nonzero[0] - 1])
    return silu_id, silu_zero


SILU_ID, SILU_ZERO = _silu_bounds()


@dataclass
class Where:
    """The place of an extreme value: what, layer, position, and the token there."""

    value: float = 0.0
    what: str = ""
    layer: int = -1
    position: int = -1
    token: int = -1

    def __str__(self) -> str:
        return f"{self.value:.3g} ({self.what}, layer {self.layer}, position {self.position})"


@dataclass
class MarginReport:
    positions: int = 0
    evaluations: int = 0  # threshold evaluations (thresholds x positions)
    min_margin: Where = field(default_factory=lambda: Where(math.inf))
    max_deviation: Where = field(default_factory=Where)  # of a threshold input (form units)
    min_eval_ratio: Where = field(default_factory=lambda: Where(math.inf))
    max_signal_deviation: Where = field(default_factory=Where)  # a live signal's value
    max_read_deviation: Where = field(default_factory=Where)  # table reads (units of scale)
    signal_deviation: dict[str, float] = field(default_factory=dict)  # per signal name
    unchecked: set[str] = field(default_factory=set)  # RAW signals without a grid
    norms_checked: int = 0
    norm_failures: int = 0
    logits_integral: bool = True
    min_logit_gap: float = math.inf
    forced: int = 0  # positions whose argmax was checked against the next token
    wrong: int = 0  # ... and differed

    @property
    def ratio(self) -> float:
        """Smallest margin over largest deviation (inf: every threshold input ideal)."""
        dev = self.max_deviation.value
        return math.inf if dev == 0 else self.min_margin.value / dev

    @property
    def exact(self) -> bool:
        return (self.norm_failures == 0 and self.logits_integral and self.wrong == 0
                and self.ratio >= 1e3)

    def merge(self, other: MarginReport) -> MarginReport:
        """The report of both runs (extremes and counts combined)."""
        out = MarginReport()
        out.positions = self.positions + other.positions
        out.evaluations = self.evaluations + other.evaluations
        out.min_margin = min(self.min_margin, other.min_margin, key=lambda w: w.value)
        out.min_eval_ratio = min(self.min_eval_ratio, other.min_eval_ratio,
                                 key=lambda w: w.value)
        for name in ("max_deviation", "max_signal_deviation", "max_read_deviation"):
            setattr(out, name, max(getattr(self, name), getattr(other, name),
                                   key=lambda w: w.value))
        out.signal_deviation = dict(self.signal_deviation)
        for k, v in other.signal_deviation.items():
            out.signal_deviation[k] = max(v, out.signal_deviation.get(k, 0.0))
        out.unchecked = self.unchecked | other.unchecked
        out.norms_checked = self.norms_checked + other.norms_checked
        out.norm_failures = self.norm_failures + other.norm_failures
        out.logits_integral = self.logits_integral and other.logits_integral
        out.min_logit_gap = min(self.min_logit_gap, other.min_logit_gap)
        out.forced = self.forced + other.forced
        out.wrong = self.wrong + other.wrong
        return out

    def __str__(self) -> str:
        ratio = ("inf (every threshold input ideal)" if math.isinf(self.ratio)
                 else f"{self.ratio:.3g}")
        lines = [
            f"{self.positions} positions, {self.evaluations} threshold evaluations",
            f"  smallest margin {self.min_margin}",
            f"  largest threshold-input deviation {self.max_deviation}",
            f"  margin / deviation: {ratio}; smallest per evaluation "
            f"{self.min_eval_ratio.value:.3g} at {self.min_eval_ratio.what}",
            f"  largest signal deviation {self.max_signal_deviation}",
            f"  largest table-read deviation (units of scale) {self.max_read_deviation}",
            f"  norms {self.norms_checked}, not exact {self.norm_failures}; logits integral "
            f"{self.logits_integral}, min gap {self.min_logit_gap:g}; teacher-forced "
            f"{self.forced}, wrong {self.wrong}"]
        if self.unchecked:
            lines.append(f"  RAW signals without a grid (unchecked): {sorted(self.unchecked)}")
        return "\n".join(lines)


@dataclass
class _LayerThresholds:
    cols: np.ndarray  # column in the engine's live gate pre-activations
    gain: np.ndarray
    shift: np.ndarray  # t - offset
    t: np.ndarray
    margin_on: np.ndarray
    margin_off: np.ndarray
    names: list[str]


@dataclass
class _SignalGroup:
    kind: str  # "bits", "onehot", "const", "read", "counter", "grid"
    cols: np.ndarray  # residual dims
    owner: np.ndarray  # index into names, per column
    names: list[str]
    scale: np.ndarray | None = None  # per column: scale, granularity or const value


class _Observer:
    """Accumulates a MarginReport from the engine's observations of one chunk."""

    def __init__(self, compiled, engine: NumpyFastEngine, raw_grid: Callable[[str], float | None]):
        self.plan = compiled.plan
        self.mean = F32(self.plan.mean)
        self.report = MarginReport()
        self.offset = 0  # global position of the chunk's first token
        self.tokens: np.ndarray = np.zeros(0, np.int64)
        self.thresholds = self._thresholds(compiled, engine)
        self.groups = {layer: self._groups(layer, raw_grid)
                       for layer in range(self.plan.n_layers)}
        self._mid = None

    def _thresholds(self, compiled, engine) -> dict[int, _LayerThresholds]:
        by_layer: dict[int, list] = {}
        for th in compiled.thresholds:
            by_layer.setdefault(th.layer, []).append(th)
        out = {}
        for layer, ths in by_layer.items():
            live = engine.mlp_units(layer)
            units = np.array([th.unit for th in ths])
            cols = np.searchsorted(live, units)
            if np.any(cols >= live.size) or np.any(live[np.minimum(cols, live.size - 1)]
                                                   != units):
                raise ValueError(f"layer {layer}: a threshold's unit is not computed")
            gain = np.array([th.gain for th in ths])
            offset = np.array([th.offset for th in ths])
            t = np.array([th.threshold for th in ths])
            out[layer] = _LayerThresholds(cols, gain, t - offset, t,
                                          offset - SILU_ID / gain,
                                          1 - offset + SILU_ZERO / gain,
                                          [th.name for th in ths])
        return out

    def _groups(self, layer: int, raw_grid) -> list[_SignalGroup]:
        plan = self.plan
        counters = {n.outputs[0] for n in plan.order if isinstance(n, Counter)}
        parts: dict[str, list] = {}
        for ref in plan.live_at(2 * layer + 2):  # pieces of signals (schedule.Plan)
            sig, dims = ref.signal, plan.ref_dims(ref)
            if sig.kind == RAW:
                if isinstance(sig.producer, Table):
                    kind, scale = "read", sig.scale
                elif sig in counters:
                    kind, scale = "counter", sig.scale
                else:
                    scale = raw_grid(sig.name)
                    if scale is None:
                        self.report.unchecked.add(sig.name)
                        continue
                    kind = "grid"
                values = [scale] * len(dims)
            elif sig.kind == CONST:
                kind, values = "const", [sig.values[o] for o in ref.offsets]
            else:
                kind, values = sig.kind, [1.0] * len(dims)
            parts.setdefault(kind, []).append((sig, dims, values))
        groups = []
        for kind, items in parts.items():
            names = [s.name for s, _, _ in items]
            cols = np.concatenate([np.asarray(d) for _, d, _ in items])
            owner = np.concatenate([np.full(len(d), i) for i, (_, d, _) in enumerate(items)])
            scale = np.concatenate([np.asarray(v, np.float64) for _, _, v in items])
            groups.append(_SignalGroup(kind, cols, owner, names, scale))
        return groups

    # -- observations --
    def __call__(self, layer: int, site: str, value: np.ndarray) -> None:
        if site in ("residual_in", "residual_mid"):
            self._norm(value)
            if site == "residual_mid":
                self._signals(layer, value)
                self._mid = value
        elif site == "mlp_in":
            r = self.report
            r.norms_checked += 1
            r.norm_failures += int(not np.array_equal(value, self._mid))
        elif site == "mlp_gate_live":
            self._gates(layer, value)

    def _norm(self, h: np.ndarray) -> None:
        r = self.report
        r.norms_checked += h.shape[0]
        r.norm_failures += int(np.sum(layers.mean_square(h)[:, 0] != self.mean))

    def _place(self, what: str, layer: int, flat: int, ncols: int, value: float) -> Where:
        pos = flat // ncols
        return Where(float(value), what, layer, self.offset + pos, int(self.tokens[pos]))

    def _gates(self, layer: int, pre: np.ndarray) -> None:
        th = self.thresholds.get(layer)
        if th is None:
            return
        r = self.report
        form = pre[:, th.cols].astype(np.float64) / th.gain + th.shift
        on = form >= th.t - 0.5
        dev = np.where(on, np.abs(form - np.round(form)), np.maximum(0.0, form - (th.t - 1)))
        margin = np.where(on, th.margin_on, th.margin_off)
        r.evaluations += form.size
        n = th.cols.size
        i = int(np.argmin(margin))
        if margin.flat[i] < r.min_margin.value:
            r.min_margin = self._place(th.names[i % n], layer, i, n, margin.flat[i])
        i = int(np.argmax(dev))
        if dev.flat[i] > r.max_deviation.value:
            r.max_deviation = self._place(th.names[i % n], layer, i, n, dev.flat[i])
        with np.errstate(divide="ignore"):
            ratio = np.where(dev > 0, margin / np.where(dev > 0, dev, 1.0), np.inf)
        i = int(np.argmin(ratio))
        if ratio.flat[i] < r.min_eval_ratio.value:
            r.min_eval_ratio = self._place(th.names[i % n], layer, i, n, ratio.flat[i])

    def _signals(self, layer: int, h: np.ndarray) -> None:
        r = self.report
        for g in self.groups[layer]:
            x = h[:, g.cols].astype(np.float64)
            if g.kind == BITS:
                dev = np.abs(np.abs(x) - 1.0)
            elif g.kind == ONEHOT:
                dev = np.minimum(np.abs(x), np.abs(x - 1.0))
                hot = np.zeros((x.shape[0], len(g.names)))
                np.add.at(hot.T, g.owner, (np.round(x) == 1).T)
                if np.any(hot != 1):  # not exactly one member hot: a gross failure
                    bad = np.argwhere(hot != 1)[0]
                    dev[bad[0], np.flatnonzero(g.owner == bad[1])[0]] = 1.0
            elif g.kind == CONST:
                dev = np.abs(x - g.scale)
            elif g.kind == "read":  # 0 or +-scale, in units of scale
                y = np.abs(x) / g.scale
                dev = np.minimum(y, np.abs(y - 1.0))
            elif g.kind == "counter":  # scale * 2^-n (n >= 0) or 0, relative
                y = x / g.scale
                with np.errstate(divide="ignore"):
                    n = np.where(y > 0, np.maximum(0.0, np.round(-np.log2(np.where(
                        y > 0, y, 1.0)))), 0.0)
                ideal = np.where(y > 0, 2.0 ** -n, 0.0)
                dev = np.where(y > 0, np.abs(y / np.where(y > 0, ideal, 1.0) - 1.0), np.abs(y))
            else:  # "grid": integer multiples of the granularity, within the bound
                y = x / g.scale
                dev = np.abs(y - np.round(y))
            worst = dev.max(axis=0)
            for i, name in enumerate(g.names):
                v = float(worst[g.owner == i].max())
                if v > r.signal_deviation.get(name, 0.0):
                    r.signal_deviation[name] = v
            i = int(np.argmax(dev))
            n = g.cols.size
            what = g.names[g.owner[i % n]]
            if dev.flat[i] > r.max_signal_deviation.value:
                r.max_signal_deviation = self._place(what, layer, i, n, dev.flat[i])
            if g.kind == "read" and dev.flat[i] > r.max_read_deviation.value:
                r.max_read_deviation = self._place(what, layer, i, n, dev.flat[i])

    def logits(self, logits: np.ndarray, next_tokens: np.ndarray) -> None:
        """Integral logits, the top-2 gap, and argmax == next_tokens where >= 0."""
        r = self.report
        r.logits_integral &= bool(np.all(logits == np.round(logits)))
        top2 = np.partition(logits, -2, axis=1)[:, -2:]
        r.min_logit_gap = min(r.min_logit_gap, float(np.min(top2[:, 1] - top2[:, 0])))
        check = next_tokens >= 0
        r.forced += int(check.sum())
        r.wrong += int(np.sum(np.argmax(logits[check], axis=1) != next_tokens[check]))


def margin_report(compiled, tokens: Sequence[int], forced_from: int | None = None, *,
                  engine: NumpyFastEngine | None = None, chunk: int = CHUNK,
                  raw_grid: Callable[[str], float | None] = lambda name: None,
                  progress: Callable[[int, int], None] | None = None) -> MarginReport:
    """Run `tokens` (one sequence, from an empty state) through the numpy fast engine
    and measure margins, deviations, norms and logits. forced_from: the argmax at
    positions >= forced_from - 1 must be the next token (teacher forcing of a trace that
    starts at forced_from); None checks nothing. engine: a NumpyFastEngine over
    compiled.weights to reuse (its observer is replaced). progress(done, total) is called
    after every chunk."""
    engine = engine or NumpyFastEngine(compiled.weights)
    obs = _Observer(compiled, engine, raw_grid)
    engine.observer = obs
    tokens = np.asarray(tokens, np.int64)
    following = np.full(tokens.size, -1, np.int64)
    if forced_from is not None:
        start = max(forced_from - 1, 0)
        following[start:-1] = tokens[start + 1:]
    state = engine.new_state()
    try:
        for lo in range(0, tokens.size, chunk):
            ids = tokens[lo:lo + chunk]
            obs.offset, obs.tokens = lo, ids
            logits = engine.prefill(state, ids.tolist(), mode="recurrent")
            obs.logits(logits, following[lo:lo + chunk])
            obs.report.positions += ids.size
            if progress is not None:
                progress(lo + ids.size, tokens.size)
    finally:
        engine.observer = None
    return obs.report
