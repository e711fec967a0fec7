"""machine.faults' units alone, in float32, without compiling the machine: the check,
lanes, pick and address units of a position are evaluated one after the other (each a
SwiGLU MLP added to a residual vector, as the model runs them) for thousands of
addresses, offsets, active masks and operations, and must give exactly what the
interpreter does: which lane faults first, the fault kind, the byte address u32(a +
offset); with a non-memory operation nothing faults. The end-to-end checks (the model
writes the TRAP record) are tests/runtime/test_faults_model.py."""

import random

import numpy as np
import pytest

from qgpu.circuit.ir import BITS
from qgpu.circuit.machine import faults
from qgpu.circuit.machine.build import build_machine
from qgpu.isa import limits
from qgpu.isa.faults import FAULT_KINDS, memory_kind
from tests.circuit.machine.unit_eval import F32, Residual, silu

EDGES = [0, 4, 508, 509, 510, 511, 512, 124, 127, 128, 0xFFFC, 0xFFFF, 0x10000, 0x10004,
         0xFFFFFFFC, 0xFFFFFFFF, 0xFFFF0000, 0xFFFF0200, 0x7FFFFFFC, 0x80000000]


@pytest.fixture(scope="module")
def circuit():
    from qgpu.circuit.machine.spec import MachineSpec

    return build_machine(MachineSpec(detect_faults=True))


class Stage:
    """The detector units of one position, chained through one residual vector."""

    def __init__(self, circuit, p):
        by = {n.name: n for n in circuit.nodes}
        self.nodes = [*(by[f"fault.check.{p}.{lane}"] for lane in range(limits.LANES)),
                      by[f"fault.lanes.{p}"], by[f"fault.pick.{p}"], by[f"fault.addr.{p}"]]
        res = Residual(self.nodes)
        self.base, self.width = res.base, res.width
        self.mats = [res.matrices(node) for node in self.nodes]
        self.sig = {s.name: s for s in self.base}

    def set(self, x, name, value, lo=0, width=None):
        sig = self.sig[name]
        width = width or sig.width - lo
        for i in range(width):
            x[self.base[sig] + lo + i] = 1.0 if value >> i & 1 else -1.0

    def get(self, x, name, lo=0, width=None):
        sig = self.sig[name]
        width = width or sig.width - lo
        vals = x[self.base[sig] + lo:self.base[sig] + lo + width]
        assert np.all(np.abs(np.abs(vals) - 1) == 0), (name, vals)
        return sum(1 << i for i, v in enumerate(vals) if v > 0)

    def run(self, x):
        for gate_w, up_w, down_w in self.mats:
            gate, up = gate_w @ x, up_w @ x
            assert np.all(gate.astype(F32) == gate) and np.all(up.astype(F32) == up)
            h = (silu(gate.astype(F32)) * up.astype(F32)).astype(np.float64)
            x = x + down_w.T @ h
        return x


def _interp(op, addrs, mask):
    """The interpreter's first fault of one memory operation: (lane, kind, address)."""
    space = "shared" if ".shared" in op else "global"
    words = limits.MODEL_GLOBAL_WORDS if space == "global" else limits.MODEL_SHARED_WORDS
    for lane in range(limits.LANES):
        a = addrs[lane]
        if mask >> lane & 1 and (a % 4 or a // 4 >= words):
            return lane, memory_kind(space, a % 4 != 0), a
    return None


@pytest.mark.parametrize("p", [0, 2])
def test_the_detector_finds_the_interpreters_first_fault(circuit, p):
    st = Stage(circuit, p)
    names = circuit.signals[f"ins.{p}.ops"]
    ops = [n for n in faults.spaces(_ins(circuit, p))[0] + faults.spaces(_ins(circuit, p))[1]]
    op_names = _op_names(circuit)
    rng = random.Random(p)
    assert names.width == len(op_names)
    for case in range(1500):
        op = rng.choice(ops + ["add", "mov"])
        off = rng.choice(EDGES + [rng.randrange(1 << 32)]) if case % 3 else rng.choice(
            [0, 4, 8, 0xFFFFFFFC])
        a = [rng.choice(EDGES + [rng.randrange(1 << 32), 4 * rng.randrange(200)])
             for _ in range(limits.LANES)]
        if case % 4 == 0:  # mostly in range: the fault is a rare lane
            a = [4 * rng.randrange(40) for _ in range(limits.LANES)]
            a[rng.randrange(4)] = rng.choice(EDGES)
        mask = rng.randrange(1, 16)
        fwd = rng.randrange(p + 1) if p else 0   # 0: register/immediate; k: position k - 1
        x = np.zeros(st.width)
        x[0] = 1.0
        for sig in st.base:
            if sig.kind == BITS and sig.producer not in st.nodes:
                st.set(x, sig.name, 0)
        st.set(x, f"ins.{p}.ops", 1 << op_names.index(op))
        st.set(x, f"imm.{p}.3.bits", off)
        st.set(x, "cur.bits", mask, lo=limits.MODEL_BLOCK_BITS, width=limits.LANES)
        for lane in range(limits.LANES):
            if fwd:
                st.set(x, f"ins.{p}.forward.0", 1 << (fwd - 1))
                st.set(x, f"result.{fwd - 1}.{lane}", a[lane])
            else:
                st.set(x, f"rf.{lane}.{p}.0.bits", a[lane])
            st.set(x, f"operands.{p}.{lane}", a[lane], 0, 32)
        x = st.run(x)
        addrs = [limits.u32(v + off) for v in a]
        want = _interp(op, addrs, mask) if op in ops else None
        summary = st.get(x, f"fault.summary.{p}")
        if want is None:
            assert summary & 1 == 0, (op, addrs, mask)
            assert st.get(x, f"fault.addr.{p}") == 0
            continue
        lane, kind, address = want
        assert summary & 1 == 1, (op, addrs, mask, want)
        fields = summary >> 1
        assert (fields & 3, fields >> 2 & 3, fields >> 4) == (p, lane, FAULT_KINDS.index(kind)), \
            (op, addrs, mask, want, fields)
        assert st.get(x, f"fault.addr.{p}") == address


def _ins(circuit, p):
    from qgpu.circuit.machine.spec import MachineSpec

    class Probe:  # what faults.spaces needs: the compiled-in operation names
        names = MachineSpec().op_names

        def has(self, *ns):
            return any(n in self.names for n in ns)

    return Probe()


def _op_names(circuit):
    from qgpu.circuit.machine.spec import MachineSpec
    return list(MachineSpec().op_names)
