"""The group barrier (`bar.group`, the CUDA front end's warp barrier): its assembly,
validation, release (every non-exited lane of the 32-thread group waits there), the fault
when a group's lanes wait at different barriers, the race detector's group epochs, and the
protocol's refusal (the compiled model has only the CTA barrier)."""

import pytest

from qgpu.errors import ProgramError
from qgpu.interp import run_launch
from qgpu.interp.races import READ, WRITE, RaceError, SharedRaces
from qgpu.isa import Bar, Block, Exit, Program, limits
from qgpu.isa.asm import assemble, disassemble
from qgpu.isa.faults import Fault
from qgpu.protocol.prompt import encode_block

# each lane stores tid * 3 at shared word tid, waits at the group barrier, then reads the
# word of lane tid ^ 4 (another warp's) and stores it at global word tid
NEIGHBOUR = """block 0:
  tid r1
  shl r2, r1, 2
  mul r3, r1, 3
  st.shared [r2], r3
  bar.group 1
block 1:
  xor r4, r1, 4
  shl r5, r4, 2
  ld.shared r6, [r5]
  jmp 2
block 2:
  st.global [r2], r6
  exit
"""


def test_bar_group_assembles_and_disassembles_exactly():
    prog = assemble(NEIGHBOUR)
    assert prog.blocks[0].terminator == Bar(1, "group")
    assert "bar.group 1" in disassemble(prog)
    assert assemble(disassemble(prog)) == prog


def test_an_unknown_barrier_scope_is_refused():
    with pytest.raises(ProgramError, match="barrier scope 'grid'"):
        Program([Block([], Bar(0, "grid")), Block([], Exit())])


@pytest.mark.parametrize("block", [8, 13, 16])
def test_the_group_barrier_orders_its_warps_accesses(block):
    prog = assemble(NEIGHBOUR)
    prog.cuda = True                       # CUDA's memory model: races are reported
    res = run_launch(prog, grid=1, block=block)
    want = [(t ^ 4) * 3 if (t ^ 4) < block else 0 for t in range(block)]
    assert res.memory[:block] == want


def test_a_cta_barrier_and_a_group_barrier_in_one_group_are_a_fault():
    prog = assemble("""block 0:
  tid r1
  setlt.u r2, r1, 4
  br r2, 1, 2
block 1:
  bar.group 3
block 2:
  bar 3
block 3:
  exit
""")
    with pytest.raises(Fault, match="wait at different barriers"):
        run_launch(prog, grid=1, block=8)


def test_exited_lanes_take_no_part_in_a_group_barrier():
    prog = assemble("""block 0:
  tid r1
  setlt.u r2, r1, 4
  br r2, 1, 2
block 1:
  bar.group 2
block 2:
  shl r3, r1, 2
  st.global [r3], 7
  exit
""")
    assert run_launch(prog, grid=1, block=8).memory[:8] == [7] * 8


def test_group_epochs_order_one_groups_warps_and_not_two_groups():
    races = SharedRaces()
    races.access(0, 0, 5, 0, WRITE, 1, 11, group=0, group_epoch=0)
    races.access(0, 0, 5, 1, READ, 2, 11, group=0, group_epoch=1)   # after bar.group
    races.access(0, 0, 5, 0, WRITE, 3, 12, group=0, group_epoch=2)  # after the next one
    with pytest.raises(RaceError, match="warp 0 writes it at block 3 and warp 1 reads"):
        races.access(0, 0, 5, 1, READ, 2, 12, group=0, group_epoch=2)   # no bar.group
    with pytest.raises(RaceError, match="warp 0 writes it at block 1 and warp 8 reads"):
        # another group's warp: only the CTA's barrier orders it after warp 0's write
        races.access(0, 0, 5, 8, READ, 4, 12, group=1, group_epoch=3)
    races.access(0, 1, 5, 8, READ, 4, 12, group=1, group_epoch=3)   # after __syncthreads


def test_the_models_prompt_refuses_a_group_barrier():
    prog = assemble(NEIGHBOUR)
    with pytest.raises(ProgramError, match="bar.group: the compiled model has only"):
        encode_block(prog.blocks[0], 0)


TWO_GROUPS = pytest.mark.skipif(limits.MAX_THREADS_PER_CTA < 64, reason="needs 2 groups")


@TWO_GROUPS
def test_a_group_passes_its_barrier_while_another_waits_at_the_ctas():
    prog = assemble("""block 0:
  tid r1
  setlt.u r2, r1, 32
  br r2, 1, 2
block 1:
  bar.group 2
block 2:
  bar 3
block 3:
  shl r3, r1, 2
  st.global [r3], 5
  exit
""")
    assert run_launch(prog, grid=1, block=64, sizes=limits.ISA_MEMORY).memory[:64] == [5] * 64


@TWO_GROUPS
def test_lanes_of_one_group_at_two_barriers_fault_while_the_other_group_runs():
    prog = assemble("""block 0:
  tid r1
  setlt.u r2, r1, 48
  br r2, 1, 2
block 1:
  bar.group 3
block 2:
  bar 3
block 3:
  exit
""")
    with pytest.raises(Fault, match="wait at different barriers"):
        run_launch(prog, grid=1, block=64, sizes=limits.ISA_MEMORY)


@TWO_GROUPS
def test_a_group_barrier_orders_its_group_and_not_the_next():
    prog = assemble(NEIGHBOUR)
    prog.cuda = True
    res = run_launch(prog, grid=1, block=64, sizes=limits.ISA_MEMORY)
    assert res.memory[:64] == [(t ^ 4) * 3 for t in range(64)]
    across = assemble(NEIGHBOUR.replace("xor r4, r1, 4", "xor r4, r1, 32"))
    across.cuda = True
    with pytest.raises(RaceError, match="no __syncthreads"):
        run_launch(across, grid=1, block=64, sizes=limits.ISA_MEMORY)
