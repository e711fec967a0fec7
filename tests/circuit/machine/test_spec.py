"""machine.spec: what the machine circuit runs, and the clear errors for everything else."""

import pytest

from qgpu.circuit.machine.spec import MAX_RECORDS, SUPPORTED_OPS, MachineSpec, check_launch
from qgpu.errors import AssemblyError, LaunchError, ProgramError
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.isa.ops import OPS
from qgpu.protocol import PROTOCOL_VERSION, VOCAB_SIZE


def test_positions_follow_the_protocol_numbering():
    spec = MachineSpec(slots=limits.SLOTS, stages=3)
    assert spec.positions == list(range(3 * limits.SLOTS))
    assert spec.earlier(limits.SLOTS) == list(range(limits.SLOTS))
    assert spec.earlier(0) == []
    with pytest.raises(ValueError):
        MachineSpec(slots=limits.SLOTS + 1)


def test_the_circuit_always_schedules_every_warp():
    assert MachineSpec().warps == limits.MODEL_MAX_WARPS
    with pytest.raises(ValueError, match="warps"):
        MachineSpec(warps=1)


def test_supported_operations_exist():
    assert set(SUPPORTED_OPS) <= set(OPS)


@pytest.mark.parametrize("src, grid, block, error, match", [
    ("block 0:\n  exit\n", 2, 16, LaunchError, "needs 8"),
    ("block 0:\n  exit\n", 5, 1, LaunchError, "grid of 5 CTAs; the model machine runs 1..4"),
    ("block 0:\n  exit\n", 1, 17, LaunchError, "block of 17 threads; the model machine runs"),
])
def test_rejections_are_clear(src, grid, block, error, match):
    with pytest.raises(error, match=match):
        check_launch(MachineSpec(), assemble(src), grid, block)


def test_a_block_with_more_memory_records_than_the_counter_holds_is_not_a_program():
    # 4 stores x 4 lanes = 16 records > the 12 the model counts: the ISA's
    # MAX_BLOCK_WRITES keeps every program inside that limit
    with pytest.raises(AssemblyError, match="MAX_BLOCK_WRITES"):
        assemble("block 0:\n  st.global [r0], r0\n  st.global [r0+4], r0\n"
                 "  st.global [r0+8], r0\n  st.global [r0+12], r0\n  exit\n")
    assert limits.MAX_BLOCK_WRITES * limits.LANES <= MAX_RECORDS


def test_operations_outside_the_spec_are_rejected():
    spec = MachineSpec(ops=("add", "mov"))
    with pytest.raises(ProgramError, match="operation 'tid' is not in the model machine "
                                           "compiled in this spec"):
        check_launch(spec, assemble("block 0:\n  tid r1\n  .writeback r1\n  exit\n"), 1, 4)
    with pytest.raises(ProgramError, match="operation 'atom.global.cas' is not in the model "
                                           "machine compiled in this spec"):
        check_launch(spec, assemble("block 0:\n  atom.global.cas r1, [0], 1, 2\n  exit\n"),
                     1, 4)
    with pytest.raises(ValueError, match="not in the model machine"):
        MachineSpec(ops=("add", "frobnicate"))


def test_more_operations_per_stage_than_the_circuit_computes_are_rejected():
    if limits.SLOTS < 2:
        pytest.skip("the ISA itself allows one operation per stage")
    with pytest.raises(ProgramError, match="1 per stage"):
        check_launch(MachineSpec(slots=1), assemble("block 0:\n  tid r1 ; tid r2\n  exit\n"),
                     1, 4)


def test_a_supported_program_passes():
    check_launch(MachineSpec(), assemble("block 0:\n  tid r1\n  add r2, r1, 1\n"
                                         "  st.global [r0], r2\n  exit\n"), 1, 3)
    check_launch(MachineSpec(), assemble("block 0:\n  st.shared [r0], r0\n  bar 1\n"
                                         "block 1:\n  atom.global.add r1, [4], 1\n  exit\n"),
                 1, 4)


def test_the_fault_detector_is_opt_in_and_recorded():
    """MachineSpec.detect_faults: the runtime's machine has it, a merge's does not; the
    record (qgpu_merge.json's spec) names it only when it is there, and a checkpoint's
    spec comes back with it."""
    from qgpu.circuit.machine.build import MAX_LAYERS, MAX_LAYERS_DETECTING, max_layers
    from qgpu.merge.circuits import MERGE_SPEC
    from qgpu.runtime.checkpoint import spec_of
    from qgpu.runtime.compiled import DEFAULT_SPEC

    assert DEFAULT_SPEC.detect_faults and not MERGE_SPEC.detect_faults
    assert "detect_faults" not in MERGE_SPEC.describe()
    assert DEFAULT_SPEC.describe()["detect_faults"] is True
    assert (max_layers(MERGE_SPEC), max_layers(DEFAULT_SPEC)) == (MAX_LAYERS,
                                                                   MAX_LAYERS_DETECTING)
    for spec in (MERGE_SPEC, DEFAULT_SPEC):
        info = {"circuit": "machine", "gpu_tokens": VOCAB_SIZE, "circuit_info": {
            "spec": spec.describe(), "protocol": PROTOCOL_VERSION, "memory": {}}}
        assert spec_of(info)[0] == spec


@pytest.mark.parametrize("protocol, tokens", [(None, 77_349), (PROTOCOL_VERSION - 1, None),
                                              (PROTOCOL_VERSION, VOCAB_SIZE - 1)])
def test_a_checkpoint_of_another_protocol_is_refused(protocol, tokens):
    """A machine merged by an older qgpu (its records without the protocol field, or
    another vocabulary) reads other tokens: refused by name, never run."""
    from qgpu.merge.circuits import MERGE_SPEC
    from qgpu.runtime.checkpoint import CheckpointMachineError, spec_of

    circuit = {"spec": MERGE_SPEC.describe(), "memory": {}}
    if protocol is not None:
        circuit["protocol"] = protocol
    info = {"circuit": "machine", "gpu_tokens": tokens or VOCAB_SIZE, "circuit_info": circuit}
    with pytest.raises(CheckpointMachineError, match=f"this qgpu speaks v{PROTOCOL_VERSION}"):
        spec_of(info, "merged")


def test_only_a_detecting_machine_has_the_fault_detector():
    from qgpu.circuit.machine.build import build_machine

    def detector_nodes(spec):
        return {n.name.split(".")[0] for n in build_machine(spec).nodes
                if n.name.startswith(("fault.", "barrier."))}

    assert detector_nodes(MachineSpec()) == set()
    assert detector_nodes(MachineSpec(detect_faults=True)) == {"fault", "barrier"}


def test_a_program_with_local_memory_is_refused_in_one_line():
    """Register spills (cuda.spill) live in local memory, which the model machine does
    not have yet: refused by name before a token is fed, never run without it."""
    prog = assemble("block 0:\n  tid r1\n  st.local [8], r1\n  .writeback r1\n  jmp 1\n"
                    "block 1:\n  ld.local r2, [0]\n  st.global [r0], r2\n  exit\n")
    with pytest.raises(ProgramError) as err:
        check_launch(MachineSpec(), prog, 1, 4)
    assert str(err.value) == ("the program uses 3 words of local memory per thread (register "
                              "spills); the model machine has none yet: run it on the "
                              "interpreter (engine='interp', --engine interp; docs/cuda.md, "
                              "'Register spills')")
    assert not {"ld.local", "st.local"} & set(SUPPORTED_OPS)
