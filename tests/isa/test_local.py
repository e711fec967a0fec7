"""isa: local memory (ld.local / st.local, LOCAL_WORDS words per thread): the operations,
their assembly, the block rules they follow, the words a program uses, their faults, and
that they have no protocol token (the model machine has no local memory)."""

import pytest

from qgpu.errors import AssemblyError, ProgramError, ProtocolError
from qgpu.isa import limits
from qgpu.isa.asm import assemble, disassemble
from qgpu.isa.faults import FAULT_KINDS, LOCAL_FAULT_KINDS, Trap, fault_message
from qgpu.isa.ops import OPS
from qgpu.isa.program import local_refusal, local_words
from qgpu.protocol import encode_prompt
from qgpu.protocol.trace import trap_tokens
from qgpu.protocol.vocab import OP_NAMES

SPILL = """.kernel spill
block 0:
  tid r1
  st.local [0+8], r1
  st.local [r0+4], r1
  .writeback r1
  jmp 1
block 1:
  ld.local r2, [8]
  st.global [r1], r2
  .writeback r2
  exit
"""


def test_local_ops_are_word_memory_ops_of_their_own_space():
    assert OPS["ld.local"].kind == "load" and OPS["st.local"].kind == "store"
    assert OPS["ld.local"].space == OPS["st.local"].space == "local"
    assert not [op for op in OPS if op.startswith("atom.local")]
    assert 1 <= limits.LOCAL_WORDS


def test_local_assembly_round_trips_and_counts_its_words():
    prog = assemble(SPILL)
    assert assemble(disassemble(prog)) == prog
    assert local_words(prog) == 3                  # byte 8 is word 2
    assert local_words(assemble("block 0:\n  tid r1\n  .writeback r1\n  exit\n")) == 0
    by_register = assemble("block 0:\n  tid r1\n  ld.local r2, [r1]\n  .writeback r2\n"
                           "  exit\n")
    assert local_words(by_register) == limits.LOCAL_WORDS


def test_local_ops_follow_the_block_memory_rules():
    with pytest.raises(AssemblyError, match="reads memory after st.local"):
        assemble("block 0:\n  st.local [0], r0\n  ld.local r1, [0]\n  .writeback r1\n"
                 "  exit\n")
    with pytest.raises(AssemblyError, match="MAX_BLOCK_WRITES"):
        assemble("block 0:\n" + "".join(f"  st.local [{4 * k}], r0\n" for k in range(4))
                 + "  exit\n")


def test_local_faults_have_messages_but_no_trap_token():
    assert not set(LOCAL_FAULT_KINDS) & set(FAULT_KINDS)
    trap = Trap("out-of-bounds-local", 4 * limits.LOCAL_WORDS, 0, 2, 1, 0, 0, "ld.local")
    assert fault_message(trap) == (f"out-of-bounds local access at byte address "
                                   f"{4 * limits.LOCAL_WORDS} (ld.local) by lane 2 of warp 0 "
                                   f"(CTA 0), block 1; local memory has {limits.LOCAL_WORDS} "
                                   f"words per thread")
    with pytest.raises(ProtocolError, match="out-of-bounds-local fault has no TRAP token"):
        trap_tokens(trap)


def test_local_ops_have_no_protocol_token():
    assert "ld.local" not in OP_NAMES and "st.local" not in OP_NAMES
    assert OP_NAMES == tuple(op for op in OPS if not op.endswith(".local"))
    with pytest.raises(ProgramError, match="block 0: st.local has no protocol token"):
        encode_prompt(assemble(SPILL), 1, 4, [0] * limits.GLOBAL_WORDS)
    assert "3 words of local memory per thread (register spills)" in local_refusal(3)
