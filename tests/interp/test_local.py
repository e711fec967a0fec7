"""interp: local memory per thread, allocated lazily: private to each thread, never in the
memory records (the trace's ADDR tokens), its faults, and the array tags a spilled pointer
keeps (interp.bounds)."""

import pytest

from qgpu.interp import Machine, run_launch
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.isa.faults import Fault
from qgpu.isa.program import Allocation
from qgpu.protocol import expected_trace

# each thread stores tid * 3 + 1 in its word 5, then reads it back and stores it to global
# word tid; a word never stored (word 6) reads 0 and goes to global word tid + 8
PRIVATE = """block 0:
  tid r1
  mul r2, r1, 3
  add r2, r2, 1
  st.local [20], r2
  .writeback r1
  jmp 1
block 1:
  ld.local r3, [r0+20]
  ld.local r4, [24]
  shl r5, r1, 2
  st.global [r5], r3
  .writeback r4, r5
  jmp 2
block 2:
  st.global [r5+32], r4
  exit
"""


def test_local_words_are_private_to_each_thread_and_not_memory_records():
    machine = Machine(assemble(PRIVATE), 1, 8, [99] * 16)
    run = machine.run()
    assert run.memory[:8] == [t * 3 + 1 for t in range(8)]
    assert run.memory[8:16] == [0] * 8
    # the stored words of each thread (warp w, lane: tid 4w + lane)
    assert machine.local == {(warp, lane): {5: (warp * 4 + lane) * 3 + 1}
                             for warp in range(2) for lane in range(4)}
    assert [ev.mem_writes for ev in run.events if ev.block == 0] == [[]] * 2
    assert all(word.space != "local" for ev in run.events for word, _ in ev.mem_writes)
    expected_trace(run.events)                   # the trace has no local record to write


def test_a_ctas_local_words_end_with_it():
    """CTAs run one after another: a CTA's threads have ended when the next starts, so
    their words are dropped (each CTA's threads see their own words only)."""
    machine = Machine(assemble(PRIVATE), 3, 4, [99] * 16)
    run = machine.run()
    assert run.memory[:4] == [1, 4, 7, 10] and run.memory[8:12] == [0] * 4
    assert set(machine.local) == {(2, lane) for lane in range(4)}


def test_a_thread_that_only_loads_allocates_nothing():
    machine = Machine(assemble("block 0:\n  ld.local r1, [252]\n  st.global [r0], r1\n"
                               "  exit\n"), 1, 4)
    assert machine.run().memory[0] == 0 and machine.local == {}


@pytest.mark.parametrize("address, kind, detail", [
    ("[2]", "misaligned-local", "misaligned local access at byte address 2"),
    (f"[{4 * limits.LOCAL_WORDS}]", "out-of-bounds-local",
     f"local memory has {limits.LOCAL_WORDS} words per thread"),
    ("[r1-4]", "out-of-bounds-local", "byte address 4294967292"),
])
def test_local_accesses_outside_the_words_fault(address, kind, detail):
    with pytest.raises(Fault) as err:
        run_launch(assemble(f"block 0:\n  tid r1\n  st.local {address}, r1\n  exit\n"), 1, 4)
    assert err.value.trap.kind == kind and err.value.trap.op == "st.local"
    assert detail in str(err.value)


# r1 <- the base of array `out` (1 word at global word 0; the linker's site is operand 0
# of block 0's add), spilled to local word 0 and loaded back; then lane t stores at out + t
SPILLED_POINTER = """block 0:
  add r1, 0, 0
  st.local [0], r1
  jmp 1
block 1:
  ld.local r2, [0]
  tid r3
  shl r4, r3, 2
  add r5, r2, r4
  .writeback r3, r5
  jmp 2
block 2:
  st.global [r5], r3
  exit
"""


def test_a_spilled_pointer_keeps_its_array_tag():
    prog = assemble(SPILLED_POINTER)
    prog.arrays = (Allocation("out", 0, 1, frozenset({(0, 0, 0, 0)})),)
    with pytest.raises(Fault, match="index 1 of array out, which has 1 word") as err:
        run_launch(prog, 1, 4)
    assert err.value.trap.lane == 1
    prog.arrays = (Allocation("out", 0, 4, frozenset({(0, 0, 0, 0)})),)
    assert run_launch(prog, 1, 4).memory[:4] == [0, 1, 2, 3]
