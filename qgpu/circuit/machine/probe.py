"""machine.probe: read named signals of a compiled circuit out of the residual stream,
position by position, through the reference engine's observer (for tests and debugging:
what the machine computed internally, e.g. latches, counters, operand values)."""

from __future__ import annotations

import numpy as np

from qgpu.circuit.compile import Compiled
from qgpu.circuit.ir import BITS, ONEHOT
from qgpu.model.reference import ReferenceEngine


def probe(compiled: Compiled, tokens, names: list[str], mode: str = "recurrent") -> dict:
    """{signal name: array [positions, width]} of each named signal's dims, taken from the
    residual right after the sublayer that makes it."""
    plan = compiled.plan
    seen: dict[tuple[int, str], list[np.ndarray]] = {}

    def observe(layer, site, value):
        seen.setdefault((layer, site), []).append(np.array(value))

    engine = ReferenceEngine(compiled.weights, observer=observe)
    engine.prefill(engine.new_state(), tokens, mode=mode)

    def get(layer, site):
        return np.concatenate(seen[(layer, site)])

    out = {}
    for n in names:
        sig = plan.circuit.signals[n]
        s = plan.birth[sig]
        if s == 0:
            h = get(0, "residual_in")
        elif s % 2:  # mixer of layer (s - 1) / 2
            layer = (s - 1) // 2
            h = get(layer, "residual_in") + get(layer, "mixer_out")
        else:
            layer = (s - 2) // 2
            h = get(layer, "residual_in") + get(layer, "mixer_out") + get(layer, "mlp_out")
        out[n] = h[:, plan.dims[sig]]
    return out


def value_of(sig_kind: str, row: np.ndarray) -> int | None:
    """A bits row as an unsigned integer; a one-hot row as its member (None: none/ill)."""
    if sig_kind == BITS:
        return int(sum(1 << i for i, x in enumerate(row) if x > 0))
    if sig_kind == ONEHOT:
        hot = np.flatnonzero(row > 0.5)
        return int(hot[0]) if len(hot) == 1 else None
    raise ValueError(sig_kind)
