"""End to end: small one-warp programs run on the compiled model (fast engine) write
exactly the interpreter's trace; --check reports the first mismatch."""

import pytest

from qgpu.circuit.machine.spec import MachineSpec
from qgpu.errors import CheckMismatch, LaunchError, ProgramError
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace, tok
from qgpu.runtime.check import check_trace
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch
from tests.runtime.programs import MEMORY_PROGRAMS, PROGRAMS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("block", [4, 3])
def test_program_is_token_exact(machine, program, block):
    prog = assemble(PROGRAMS[program])
    want = expected_trace(run_launch(prog, 1, block).events)
    run = generate_launch(machine, prog, 1, block, max_tokens=len(want) + 8)
    assert run.trace == want


@pytest.mark.parametrize("program", sorted(MEMORY_PROGRAMS))
def test_memory_program_is_token_exact_and_read_from_the_state(machine, program):
    prog = assemble(MEMORY_PROGRAMS[program])
    memory = [(7 * a + 3) * (-1) ** a & 0xFFFFFFFF for a in range(20)]
    res = run_launch(prog, 1, 4, memory=memory)
    want = expected_trace(res.events)
    run = generate_launch(machine, prog, 1, 4, memory, max_tokens=len(want) + 8)
    assert run.trace == want
    assert run.memory == res.memory


def test_check_reports_the_first_mismatch(machine):
    prog = assemble(PROGRAMS["straight"])
    run = generate_launch(machine, prog, 1, 4)
    bad = list(run.trace)
    bad[3] = tok("V", 0x4242)
    with pytest.raises(CheckMismatch, match=r"token 3 .*interpreter V\(0x0000\), "
                       r"model V\(0x4242\)"):
        check_trace(prog, 1, 4, [], run.prompt, bad)
    assert check_trace(prog, 1, 4, [], run.prompt, run.trace) == run.trace


def test_programs_outside_the_circuit_are_rejected(machine):
    with pytest.raises(LaunchError, match="needs 8"):
        generate_launch(machine, assemble("block 0:\n  exit\n"), 2, 16)


def test_check_fails_when_one_compiled_weight_is_perturbed(machine):
    """Fault injection: +4 on one output-head weight (the constant dim of V(5)'s row) makes
    V(5) outscore V(4), one bit away, so the model writes a wrong value and --check stops
    at that token. The weight is restored afterwards."""
    from qgpu.model.fast import FastEngine
    from qgpu.model.weights import LM_HEAD
    from qgpu.runtime.compiled import ModelMachine

    prog = assemble("block 0:\n  mov r1, 4\n  jmp 1\nblock 1:\n  st.global [0], r1\n  exit\n")
    head = machine.compiled.weights[LM_HEAD]
    row, one = tok("V", 5), 0
    original = float(head[row, one])
    head[row, one] = original + 4.0
    try:
        faulty = ModelMachine(machine.compiled, machine.spec,
                              FastEngine(machine.compiled.weights))
        run = generate_launch(faulty, prog, 1, 4, max_tokens=64)
    finally:
        head[row, one] = original
    assert tok("V", 5) in run.trace
    with pytest.raises(CheckMismatch, match=r"interpreter V\(0x0004\), model V\(0x0005\)"):
        check_trace(prog, 1, 4, [], run.prompt, run.trace)
    healthy = generate_launch(machine, prog, 1, 4)
    assert check_trace(prog, 1, 4, [], healthy.prompt, healthy.trace) == healthy.trace


def test_a_machine_with_an_op_subset_runs_its_programs_and_refuses_others():
    prog = assemble(PROGRAMS["straight"])
    spec = MachineSpec.for_programs([prog])
    assert "popc" not in spec.op_names and "add" in spec.op_names
    small = load_machine(spec=spec, progress=False)
    full = load_machine(progress=False)
    assert small.compiled.plan.hidden <= full.compiled.plan.hidden
    assert small.compiled.weights.nonzero_count() < full.compiled.weights.nonzero_count()
    want = expected_trace(run_launch(prog, 1, 4).events)
    assert generate_launch(small, prog, 1, 4, max_tokens=len(want) + 8).trace == want
    other = assemble("block 0:\n  tid r1\n  popc r2, r1\n  .writeback r2\n  exit\n")
    with pytest.raises(ProgramError, match="'popc' is not in the model machine compiled"):
        generate_launch(small, other, 1, 4)
