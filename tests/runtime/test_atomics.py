"""End to end on the compiled model: global atomics (add, exch, and, or, xor) with lanes
hitting the same word (each lane gets the word as the lower lanes left it; one record per
word with the value after the last lane), partial masks (block 3), forwarded and register
operands, immediates, negative offsets, carries of up to 3 into both halves of an add;
the model's tokens equal the interpreter's and the global memory read from the model's
state equals the interpreter's."""

import pytest

from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.errors import ProgramError
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch
from tests.runtime.mem_programs import ADD_CARRIES, ATOMICS, ATOMICS_MEMORY

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


@pytest.mark.parametrize("block", [4, 3, 1])
@pytest.mark.parametrize("program", ["atomics", "add_carries"])
def test_atomics_are_token_exact_and_memory_read_from_the_state(machine, program, block):
    prog = assemble({"atomics": ATOMICS, "add_carries": ADD_CARRIES}[program])
    res = run_launch(prog, 1, block, memory=ATOMICS_MEMORY)
    want = expected_trace(res.events)
    run = generate_launch(machine, prog, 1, block, ATOMICS_MEMORY, max_tokens=len(want) + 8)
    assert run.trace == want
    assert run.memory == res.memory


@pytest.mark.parametrize("seed", range(3))
def test_random_words_and_values(machine, seed):
    """Random 32-bit values and memory words, addresses colliding at random."""
    import random

    rng = random.Random(seed)
    memory = [rng.getrandbits(32) for _ in range(8)]
    ops = ["add", "exch", "and", "or", "xor"]
    mask = rng.choice([0, 1, 2, 3])
    blocks = [f"block 0:\n  tid r1\n  and r2, r1, {mask}\n  add r2, r2, r2\n  add r2, r2, r2\n"
              "  .writeback r1, r2\n  jmp 1\n"]
    for b, op in enumerate(ops, start=1):
        v = rng.getrandbits(32)
        blocks.append(f"block {b}:\n  xor r3, r1, {v}\n  atom.global.{op} r4, [r2+{4 * b}], r3\n"
                      f"  add r5, r4, r3\n  .writeback r4, r5\n  "
                      + ("exit\n" if b == len(ops) else f"jmp {b + 1}\n"))
    prog = assemble("".join(blocks))
    for block in (4, 3):
        res = run_launch(prog, 1, block, memory=memory)
        want = expected_trace(res.events)
        run = generate_launch(machine, prog, 1, block, memory, max_tokens=len(want) + 8)
        assert run.trace == want
        assert run.memory == res.memory


def test_atomics_come_as_one_family():
    """An op subset with one atomic holds all twenty (their units serve them all); one
    without atomics refuses them."""
    prog = assemble("block 0:\n  atom.global.min.s r1, [0], 1\n  exit\n")
    check_launch(MachineSpec(ops=("atom.shared.cas",)), prog, 1, 4)
    assert len([op for op in MachineSpec(ops=("atom.shared.cas",)).op_names
                if op.startswith("atom.")]) == 20
    with pytest.raises(ProgramError, match="atom.global.min.s"):
        check_launch(MachineSpec(ops=("add", "mov")), prog, 1, 4)


SUITE_KERNELS = ("dot", "atomic_exch_conservation", "dot_shared", "odd_even_sort",
                 "reduce_sum_shared", "scan_serial", "scan_shfl_up")


def _one_warp_launches():
    from qgpu.suite import load_suite

    for spec in load_suite():
        if spec.name in SUITE_KERNELS:
            for index, launch in enumerate(spec.launches):
                if launch["grid"] == 1 and launch["block"] <= 4:
                    yield pytest.param(spec, launch, id=f"{spec.name}-{index}")


@pytest.mark.parametrize(("spec", "launch"), list(_one_warp_launches()))
def test_suite_kernels_end_to_end(spec, launch):
    """The suite's one-warp kernels with barriers, shared memory or atomics, on the model
    with --check (every token compared with the interpreter's); skipped while one of their
    other operations (mul, shifts, shuffles: other families) is not in the circuit."""
    import numpy as np

    from qgpu.circuit.machine.spec import SUPPORTED_OPS
    from qgpu.suite import compiled_module, run_case

    program = compiled_module(spec.source).get_function(spec.kernel).program
    missing = sorted({i.op for b in program.blocks for st in b.stages for i in st}
                     - set(SUPPORTED_OPS))
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    outputs, expected, _ = run_case(spec, launch, engine="model-check")
    assert all(np.array_equal(outputs[k], v) for k, v in expected.items())
