"""End to end on the compiled model: barriers (one warp: divergent lanes wait, exited
lanes release the barrier) and shared memory (st.shared records at flat addresses
128 + w, ld.shared reads them back in later blocks, same-word stores, negative offsets):
the model's tokens equal the interpreter's, and global memory read from the model's
state equals the interpreter's."""

import pytest

from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import tok
from qgpu.runtime.compiled import load_machine
from tests.runtime.launches import run_both
from tests.runtime.mem_programs import BAR_AFTER_EXIT, BAR_DIVERGENT, SHARED

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


@pytest.mark.parametrize("block", [4, 3])
@pytest.mark.parametrize("program", ["bar_divergent", "bar_after_exit"])
def test_barrier_is_token_exact(machine, program, block):
    text = {"bar_divergent": BAR_DIVERGENT, "bar_after_exit": BAR_AFTER_EXIT}[program]
    res, want, run = run_both(machine, text, block=block)
    # the barrier, not a jmp: the lanes that reach it first wait for the others
    assert [e.block for e in res.events][:5] in ([0, 1, 3, 4, 2], [0, 1, 3, 2, 4])
    assert run.trace == want


@pytest.mark.parametrize("block", [4, 3])
def test_shared_memory_is_token_exact(machine, block):
    memory = [0x11111111 * (a % 16) for a in range(24)]
    res, want, run = run_both(machine, SHARED, block=block, memory=memory)
    shared_records = [t for t in want if t >= tok("ADDR", 128) and t < tok("ADDR", 160)]
    assert shared_records  # the trace carries shared words at flat addresses 128 + w
    assert run.trace == want
    assert run.memory == res.memory


def test_one_warp_barriers_are_accepted():
    check_launch(MachineSpec(), assemble(BAR_DIVERGENT), 1, 4)
