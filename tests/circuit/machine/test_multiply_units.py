"""multiply's units alone, in float32, without compiling the machine: the products, mid and
alu_high units of one position and lane are recorded unit by unit (gate, up, down forms)
and evaluated for thousands of operand pairs, each output dim's sum taken in several
orders (unit order, reversed, shuffled, all positive terms first): every order gives
the exact value, and the result bits spell the low 32 bits of a * b; with another
operation the multiply adds exactly 0."""

import random

import numpy as np
import pytest

from qgpu.circuit.ir import BITS, RAW
from qgpu.circuit.machine.build import build_machine
from qgpu.circuit.machine.spec import SUPPORTED_OPS
from tests.circuit.machine.unit_eval import F32, Residual, silu


@pytest.fixture(scope="module")
def nodes():
    c = build_machine()
    by_name = {n.name: n for n in c.nodes}
    return [by_name[f"{kind}.0.1"] for kind in ("mul.products", "mul.mid", "alu_high")]


def _run(mats, x, rng):
    """One MLP in float32: pre-activations must be exact float32 values; every output dim's
    sum equals its exact value in each summation order."""
    gate_w, up_w, down_w = mats
    gate, up = gate_w @ x, up_w @ x
    assert np.all(gate.astype(F32) == gate) and np.all(up.astype(F32) == up)
    h = silu(gate.astype(F32)) * up.astype(F32)
    terms = (down_w.T.astype(F32) * h[None, :]).astype(F32)  # [dims, units]
    exact = terms.astype(np.float64).sum(axis=1)
    perm = rng.permutation(terms.shape[1])
    positive_first = np.argsort(-np.sign(terms), axis=1, kind="stable")
    for ordered in (terms, terms[:, ::-1], terms[:, perm],
                    np.take_along_axis(terms, positive_first, axis=1)):
        assert np.array_equal(np.cumsum(ordered, axis=1, dtype=F32)[:, -1], exact)
    return x + exact


def _inputs(res, nodes, a, b, op):
    x = np.zeros(res.width)
    x[0] = 1.0
    for sig, base in res.base.items():
        if sig.kind == BITS:
            x[base:base + sig.width] = -1.0
    opnd = nodes[0].inputs()[0].signal
    for i in range(32):
        x[res.base[opnd] + i] = 1.0 if a >> i & 1 else -1.0
        x[res.base[opnd] + 32 + i] = 1.0 if b >> i & 1 else -1.0
    ops = nodes[0].inputs()[2].signal
    x[res.base[ops] + SUPPORTED_OPS.index(op)] = 1.0
    for node in nodes:  # outputs start at 0 (fresh dims)
        for sig in node.outputs:
            x[res.base[sig]:res.base[sig] + sig.width] = 0.0
    return x


def test_mul_units_in_float32_any_summation_order(nodes):
    res = Residual(nodes)
    mats = [res.matrices(n) for n in nodes]
    result = nodes[2].outputs[0]
    rng = np.random.default_rng(3)
    edges = [0, 1, 3, 0xFFFF, 0x10000, 0x10001, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFD,
             0xFFFFFFFF, 0x12345678, 0x9ABCDEF0]
    pyrng = random.Random(5)
    pairs = [(a, b) for a in edges for b in edges]
    pairs += [(pyrng.getrandbits(32), pyrng.getrandbits(32)) for _ in range(300)]
    pairs += [(pyrng.getrandbits(32) | 0xFFFF0000, pyrng.getrandbits(32) | 0xFFFF)
              for _ in range(60)]
    for a, b in pairs:
        x = _inputs(res, nodes, a, b, "mul")
        for m in mats:
            x = _run(m, x, rng)
        bits = x[res.base[result]:res.base[result] + 32]
        assert np.all(np.abs(bits) == 1)
        assert sum(1 << i for i in range(32) if bits[i] > 0) == a * b & 0xFFFFFFFF, (a, b)
    for sig in nodes[0].outputs + nodes[1].outputs:
        if sig.kind == RAW:
            assert np.all(np.abs(x[res.base[sig]:res.base[sig] + sig.width]) <= sig.scale)


def test_another_operation_leaves_every_multiply_sum_zero(nodes):
    res = Residual(nodes)
    products, mid = (res.matrices(n) for n in nodes[:2])
    rng = np.random.default_rng(4)
    x = _inputs(res, nodes, 0xFFFFFFFF, 0xFFFFFFFF, "add")
    x = _run(mid, _run(products, x, rng), rng)
    for sig in nodes[0].outputs + nodes[1].outputs:
        v = x[res.base[sig]:res.base[sig] + sig.width]
        assert np.all(v == 0) if sig.kind == RAW else np.all(v == -1)
