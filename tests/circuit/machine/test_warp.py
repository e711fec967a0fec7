"""machine.warp's units evaluated on their own (float32 SwiGLU, as the model computes
them), against the reference interpreter's shuffle and ballot: every combination of the
shuffle's lane/delta (5 bits), clamp (5 bits) and segment mask (5 bits), random active
masks and operands, for every lane and warp operation (and one other operation, which
must leave the result bits alone)."""

from types import SimpleNamespace

import numpy as np
import pytest

from qgpu.circuit.ir import BITS, Circuit
from qgpu.circuit.machine import warp
from qgpu.circuit.machine.families import StageView
from qgpu.circuit.machine.logic import unit
from qgpu.circuit.machine.spec import SUPPORTED_OPS
from qgpu.interp.simt import Machine
from qgpu.model.layers import silu
from qgpu.primitives import MlpWriter

LANES = 4
OPS = (*warp.SHFL, "ballot", "add")


class Recorder(MlpWriter):
    def __init__(self):
        super().__init__(weights=None, layer=0)
        self.units = []

    def unit(self, gate, up, down):
        self.units.append((gate, up, down))
        self.next_unit += 1
        return self.next_unit - 1


def evaluate(node, values):
    """The unit's outputs (+-1 bits) for the rows of `values` (signal -> [N, width])."""
    rec, base = Recorder(), {}

    def dims(ref):
        start = base.setdefault(ref.signal, 1 + sum(s.width for s in base))
        return [start + o for o in ref.offsets]

    node.emit(rec, dims, 0, node.outputs)
    width = 1 + sum(s.width for s in base)
    n = len(next(iter(values.values())))
    h = np.zeros((n, width), np.float32)
    h[:, 0] = 1.0
    for sig, start in base.items():
        if sig in values:
            h[:, start:start + sig.width] = values[sig]

    def matrix(forms):
        m = np.zeros((width, len(forms)), np.float32)
        for u, form in enumerate(forms):
            for d, coeff in form.items():
                m[d, u] = coeff
        return m

    gate, up, down = (matrix([u[k] for u in rec.units]) for k in range(3))
    out = (silu(h @ gate) * (h @ up)) @ down.T
    return {sig: out[:, base[sig]:base[sig] + sig.width] for sig in node.outputs}


def pm(values, width):
    """+-1 bits of integers."""
    values = np.asarray(values, np.int64)
    return np.where((values[:, None] >> np.arange(width)) & 1, 1.0, -1.0).astype(np.float32)


def reference(mode, lane, active, a, b, c):
    if mode == "ballot":
        return sum(1 << j for j in active if a[j] != 0)
    fake = SimpleNamespace(_value=lambda warp_, j, o: a[j])
    ins = SimpleNamespace(spec=SimpleNamespace(mode=mode.split(".")[1]), srcs=[None])
    return Machine._shfl(fake, None, ins, lane, active, a[lane], b, c)


@pytest.fixture(scope="module")
def scratch():
    c = Circuit("warp_test", 2)
    operands = {j: c.token_bits(f"operands.{j}", 97, lambda t: 0) for j in range(LANES)}
    mask = c.token_bits("mask", LANES, lambda t: 0)
    ops = c.token_bits("ops", len(SUPPORTED_OPS), lambda t: 0)
    ins = SimpleNamespace(position=0, ops=ops, op=lambda name: ops[SUPPORTED_OPS.index(name)],
                          has=lambda *names: True)
    view = StageView(c, SimpleNamespace(cur_mask=mask), ins, operands, {}, {}, {})
    lanes = {}
    for lane in range(LANES):
        ext = warp.build(view, lane)
        (result,) = unit(c, f"high.{lane}", [*operands.values(), mask, ops, *ext.inputs],
                         [(f"result.{lane}", BITS, 32)],
                         lambda ctx, outs, ext=ext: ext.high(ctx, outs[0]))
        lanes[lane] = (ext.inputs[0].producer, result.producer)
    return operands, mask, ops, lanes


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("lane", range(LANES))
def test_units_match_the_interpreter(scratch, op, lane):
    operands, mask, ops, lanes = scratch
    rng = np.random.default_rng(lane * 10 + OPS.index(op))
    fields = np.arange(1 << 15)  # b's low 5 bits | clamp << 5 | segment mask << 10
    n = len(fields)
    b = (fields & 31) | (rng.integers(0, 1 << 27, n) << 5) * (rng.random(n) < 0.2)
    c = (fields >> 5 & 31) | (fields >> 10 & 31) << 8 | (rng.integers(0, 2, n) << 7)
    masks = rng.integers(0, 16, n) | (1 << lane)
    a = rng.integers(0, 1 << 32, (n, LANES))
    a[rng.random((n, LANES)) < 0.2] = 0
    values = {mask: pm(masks, LANES),
              ops: pm(np.full(n, 1 << SUPPORTED_OPS.index(op)), len(SUPPORTED_OPS))}
    for j in range(LANES):
        bc = (b if j == lane else rng.integers(0, 1 << 32, n), c if j == lane else
              rng.integers(0, 1 << 32, n))
        values[operands[j]] = np.concatenate([pm(a[:, j], 32), pm(bc[0], 32), pm(bc[1], 32),
                                              np.ones((n, 1), np.float32)], axis=1)
    flags_node, high_node = lanes[lane]
    flags = evaluate(flags_node, values)
    assert all(set(np.unique(f)) <= {-1.0, 1.0} for f in flags.values())
    values.update(flags)
    (out,) = evaluate(high_node, values).values()
    assert set(np.unique(out)) <= {-1.0, 1.0}
    got = ((out > 0) * (1 << np.arange(32))).sum(axis=1)
    if op == "add":
        assert (got == 0).all()
        return
    for row in range(n):
        active = [j for j in range(LANES) if masks[row] >> j & 1]
        want = reference(op, lane, active, [int(x) for x in a[row]], int(b[row]), int(c[row]))
        assert got[row] == want, (op, lane, active, hex(b[row]), hex(c[row]))
