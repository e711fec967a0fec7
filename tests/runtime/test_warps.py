"""End to end on the compiled model with several warps and CTAs: special registers per
warp and CTA, barriers across warps (the epoch in EXEC wraps), shared memory per CTA,
exits that release a barrier. The model's tokens equal the interpreter's, and global
memory read from the model's state equals the interpreter's."""

import pytest

from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.errors import LaunchError
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace
from qgpu.protocol.vocab import fields_of
from qgpu.runtime.compiled import load_machine
from tests.runtime.launches import run_both
from tests.runtime.warp_programs import LAUNCHES, PROGRAMS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


@pytest.mark.parametrize("grid,block", LAUNCHES)
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_warps_and_ctas_are_token_exact(machine, program, grid, block):
    res, want, run = run_both(machine, PROGRAMS[program], grid, block)
    assert run.trace == want
    assert run.memory == res.memory
    warps = {fields_of(t)[1][1] for t in want if fields_of(t)[0] == "EXEC"}
    assert len(warps) == grid * -(-block // 4)


def test_barrier_epochs_wrap():
    prog = assemble(PROGRAMS["barrier_loop"])
    epochs = {fields_of(t)[1][3] for t in expected_trace(run_launch(prog, 2, 8).events)
              if fields_of(t)[0] == "EXEC"}
    assert epochs == {0, 1, 2, 3}


def test_launches_beyond_the_warps_are_refused():
    prog = assemble(PROGRAMS["ids"])
    check_launch(MachineSpec(), prog, 4, 4)
    with pytest.raises(LaunchError, match="needs 8"):
        check_launch(MachineSpec(), prog, 2, 16)
