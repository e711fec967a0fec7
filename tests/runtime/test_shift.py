"""shl, shr.u, shr.s on the compiled model: every lane's a and b come from memory, so the
launches cover the amounts around each level's boundary (0..5, 15..17, 31..33, 2^31,
random) and edge values, with register, forwarded and immediate operands, all lanes and
partial masks; the model's tokens and final memory equal the interpreter's."""

import random

import pytest

from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace
from qgpu.runtime.compiled import load_machine
from tests.runtime.launches import assert_token_exact

pytestmark = pytest.mark.slow

_rng = random.Random(5)
AMOUNTS = [0, 1, 2, 3, 4, 5, 15, 16, 17, 31, 32, 33, 0x80000000, 0xFFFFFFFF, 63, 0x100,
           0x10000, 7, 8, 28, 29, 30] + [_rng.getrandbits(5) for _ in range(6)] + \
          [_rng.getrandbits(32) for _ in range(4)]
VALUES = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x12345678, 0xF0F0F0F0, 0x8000FFFF] + \
         [_rng.getrandbits(32) for _ in range(8)]

# words 0..3: a per lane, 4..7: b per lane; r1 = 4 * tid
PROGRAM = """
block 0:
  tid r1
  add r1, r1, r1
  add r1, r1, r1
  ld.global r2, [r1]
  .writeback r1, r2
  jmp 1
block 1:
  ld.global r3, [r1+16]
  shl r4, r2, r3
  shr.u r5, r2, r3
  shr.s r6, r2, r3
  .writeback r3, r4, r5, r6
  jmp 2
block 2:
  shl r7, r2, {i0}
  shr.u r8, r2, {i1}
  shr.s r9, r2, {i2}
  shl r10, r9, r3
  .writeback r7, r8, r9, r10
  jmp 3
block 3:
  shr.s r11, {v0}, r3
  shr.u r12, r11, {i3}
  shl r13, {v1}, r2
  shr.s r14, r13, r13
  .writeback r11, r12, r13, r14
  exit
"""

N_LAUNCHES = 8


def _launch(n: int) -> tuple[str, list[int]]:
    """Launch n: lane l shifts VALUES[...] by AMOUNTS[...], every amount with several
    values over the launches; immediates from the same lists."""
    a = [VALUES[(5 * n + 3 * lane) % len(VALUES)] for lane in range(4)]
    b = [AMOUNTS[(4 * n + lane) % len(AMOUNTS)] for lane in range(4)]
    imms = {f"i{j}": AMOUNTS[(7 * n + 3 * j + 1) % len(AMOUNTS)] for j in range(4)}
    imms.update(v0=VALUES[(n + 2) % len(VALUES)], v1=VALUES[(3 * n + 5) % len(VALUES)])
    return PROGRAM.format(**imms), a + b


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


def test_launches_cover_every_amount_and_value():
    pairs = {tuple(_launch(n)[1][lane::4]) for n in range(N_LAUNCHES) for lane in range(4)}
    assert {b for _, b in pairs} >= set(AMOUNTS[:28])
    assert {a for a, _ in pairs} >= set(VALUES[:8])


@pytest.mark.parametrize("n", range(N_LAUNCHES))
def test_shifts_are_token_exact(machine, n):
    text, memory = _launch(n)
    assert_token_exact(machine, text, block=4, memory=memory)


@pytest.mark.parametrize("n", [1, 6])
def test_shifts_with_three_lanes(machine, n):
    text, memory = _launch(n)
    assert_token_exact(machine, text, block=3, memory=memory)


def test_shift_results_stored_and_diverged(machine):
    """Shifts under a partial mask from a branch, stored to memory (shl by 2: addresses)."""
    text = """
block 0:
  tid r1
  shl r2, r1, 2
  ld.global r3, [r2]
  setlt.u r4, r1, 2
  br r4, 1, 2
block 1:
  shr.s r5, r3, r1
  st.global [r2+32], r5
  exit
block 2:
  shl r5, r3, 30
  shr.u r6, r5, r1
  st.global [r2+32], r6
  exit
"""
    assert_token_exact(machine, text, block=4,
                       memory=[0x80000001, 0xC0000003, 0xFFFFFFFF, 0x7FFFFFFE])


# --- the family's SwiGLU units alone, evaluated in float32 (no compiling) -----------------


def family_units(module):
    """(level-1 node, extension, operand signal, ops signal) of `module`'s builder on a
    bare circuit: operands and op bits as plain inputs, one position, lane 0."""
    from types import SimpleNamespace

    from qgpu.circuit.ir import BITS, Circuit
    from qgpu.circuit.machine.spec import SUPPORTED_OPS
    from qgpu.circuit.units import make_unit

    c = Circuit("family", 10)
    opnd, ops = make_unit(c, "src", "machine", [],
                          [("opnd", BITS, 97, {}), ("ops", BITS, len(SUPPORTED_OPS), {})],
                          lambda *args: None)
    ins = SimpleNamespace(position=0, ops=ops, op=lambda n: ops[SUPPORTED_OPS.index(n)],
                          has=lambda *names: True)
    ext = module.build(SimpleNamespace(c=c, ins=ins, operands={0: opnd}), 0)
    (node,) = [n for n in c.nodes if n.name != "src"]
    return node, ext, opnd, ops


def evaluate_family(module, op: str, pairs) -> list[int]:
    """Results of `op` on (a, b) pairs through the family's level-1 unit and its high
    body alone (float32, silu = x / (1 + exp(-x))); every level-1 output and result
    dim must be exactly +-1 (or 0/1)."""
    import numpy as np

    from qgpu.circuit.ir import as_ref
    from qgpu.circuit.machine.logic import Ctx
    from qgpu.circuit.machine.spec import SUPPORTED_OPS
    from qgpu.primitives import MlpWriter

    node, ext, opnd, ops = family_units(module)
    base: dict = {}

    def dims(ref):
        ref = as_ref(ref)
        base.setdefault(ref.signal, 1 + sum(s.width for s in base))
        return [base[ref.signal] + o for o in ref.offsets]

    for sig in (opnd, ops, *node.outputs):
        dims(sig)
    width = 1 + sum(s.width for s in base)
    r = list(range(width, width + 32))

    class Recorder(MlpWriter):
        def __init__(self):
            super().__init__(weights=None, layer=0)
            self.rows = []

        def unit(self, gate, up, down):
            self.rows.append((gate, up, down))
            self.next_unit += 1
            return self.next_unit - 1

    def mlp(rows, x):
        g, u, d = (np.zeros((len(rows), width + 32), np.float32) for _ in range(3))
        for k, forms in enumerate(rows):
            for m, form in zip((g, u, d), forms, strict=True):
                for dim, coeff in form.items():
                    m[k, dim] = coeff
        with np.errstate(over="ignore"):
            z = x @ g.T
            h = z / (np.float32(1) + np.exp(-z)) * (x @ u.T)
        return x + h @ d

    low, high = Recorder(), Recorder()
    node.emit(low, dims, 0, node.outputs)
    ext.high(Ctx(high, dims, 0), r)
    x = np.zeros((len(pairs), width + 32), np.float32)
    x[:, 0] = 1
    for row, (a, b) in enumerate(pairs):
        word = a | b << 32
        x[row, dims(opnd)[:64]] = [1 if word >> i & 1 else -1 for i in range(64)]
    x[:, dims(opnd)[64:]] = -1
    x[:, dims(ops)] = [1 if name == op else -1 for name in SUPPORTED_OPS]
    x = mlp(low.rows, x)
    for sig in node.outputs:
        assert np.isin(x[:, dims(sig)], (-1.0, 0.0, 1.0)).all(), sig.name
    x[:, r] = -1
    x = mlp(high.rows, x)
    assert np.isin(x[:, r], (-1.0, 1.0)).all()
    return [sum(1 << i for i in range(32) if row[i] == 1) for row in x[:, r]]


def _unit_pairs():
    rng = random.Random(3)
    vals = VALUES + [rng.getrandbits(32) for _ in range(24)]
    amounts = list(range(34)) + AMOUNTS + [rng.getrandbits(32) for _ in range(16)]
    return [(a, b) for a in vals for b in amounts]


@pytest.mark.parametrize("op", ["shl", "shr.u", "shr.s", "add"])
def test_shift_units_are_exact_in_float32(op):
    """Level 1 and the high body alone, ~3,700 pairs per operation: exact for the shifts,
    exactly 0 (the disabled family adds nothing) for another operation."""
    from qgpu.circuit.machine import shift
    from qgpu.isa.ops import OPS

    pairs = _unit_pairs()
    got = evaluate_family(shift, op, pairs)
    want = [OPS[op].fn(a, b) if op in shift.SHIFT else 0 for a, b in pairs]
    assert got == want


def test_shift_launch_is_exact_with_large_margins(machine):
    """circuit_report over a short shift launch (prompt and trace through the reference
    engine): norms, signals, integral logits, and the gated units' and steps' margins."""
    from qgpu.analysis.circuit_report import circuit_report
    from qgpu.protocol import encode_prompt

    prog = assemble("block 0:\n  tid r1\n  shl r2, r1, 2\n  ld.global r3, [r2]\n"
                    "  shr.s r4, r3, r1\n  .writeback r4\n  exit\n")
    memory = [0x80000001, 0xC0000003, 0xFFFFFFFF, 0x7FFFFFFE]
    res = run_launch(prog, 1, 4, memory=memory)
    tokens = encode_prompt(prog, 1, 4, memory) + expected_trace(res.events)
    report = circuit_report(machine.compiled, tokens)
    assert report.exact, str(report)
    assert report.min_ratio >= 1e3 and report.min_logit_gap >= 2
