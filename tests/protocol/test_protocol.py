"""Launch protocol: vocabulary layout, prompt round trip, the trace oracle and its
decoder, and protocol errors."""

import pytest

from qgpu.errors import ProtocolError
from qgpu.interp import run_launch
from qgpu.isa import machine as M
from qgpu.isa.asm import assemble
from qgpu.protocol import (
    VOCAB_SIZE,
    decode_prompt,
    decode_trace,
    encode_prompt,
    expected_trace,
    kind_of,
    name,
    tok,
)
from qgpu.protocol.vocab import KINDS, exec_token

LOOP = """
block 0:
  tid r1 ; mov r2, 0 ; mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2 ; add r2, r2, 1
  setle.u r4, r2, r1
  br r4, 1, 2
block 2:
  shl r5, r1, 2
  atom.global.add r6, [64], r3 ; st.global [r5], r3
  exit
"""


def test_vocabulary_is_a_bijection():
    seen = set()
    for k in KINDS:
        for arg in (0, k.count - 1):
            t = tok(k.name, arg)
            assert kind_of(t) == (k.name, arg)
            seen.add(t)
    assert tok("V", 0x1234) == 0x1234
    assert max(seen) == VOCAB_SIZE - 1
    with pytest.raises(ValueError):
        tok("EXEC", M.ROM_BLOCKS * M.MAX_WARPS)
    with pytest.raises(ValueError):
        kind_of(VOCAB_SIZE)


def test_prompt_round_trip():
    prog = assemble(LOOP)
    mem = [5, 0, 0xFFFFFFFF, 0x12345678]
    launch = decode_prompt(encode_prompt(prog, 2, 3, mem))
    assert launch.program.blocks == prog.blocks
    assert (launch.grid, launch.block) == (2, 3)
    assert launch.memory[:4] == mem and launch.memory[4:] == [0] * (M.GLOBAL_WORDS - 4)


def test_trace_layout_and_decoding():
    prog = assemble(LOOP)
    res = run_launch(prog, 1, 3)
    trace = expected_trace(res.events)
    assert trace[0] == exec_token(0, 0) and trace[-1] == tok("HALT")
    recs = decode_trace(decode_prompt(encode_prompt(prog, 1, 3)), trace)
    assert [r.block for r in recs[:-1]] == [e.block for e in res.events]
    # block 0 returns r1, r2, r3 (live into the loop): 3 regs x 3 lanes x 2 tokens
    assert sorted(recs[0].registers) == [1, 2, 3]
    assert recs[1].position == 1 + 18
    last = recs[-2]
    assert last.block == 2 and last.active == (0, 1, 2)
    assert last.mem_writes == [(16, 4), (0, 0), (1, 1), (2, 3)]
    assert recs[1].taken == (1, 2)


def test_trace_of_multi_warp_barrier_launch():
    prog = assemble("""
block 0:
  tid r1
  shl r2, r1, 2
  st.shared [r2], r1
  bar 1
block 1:
  ld.shared r3, [0]
  st.global [0], r3
  exit
""")
    res = run_launch(prog, 2, 8)
    trace = expected_trace(res.events)
    recs = decode_trace(decode_prompt(encode_prompt(prog, 2, 8)), trace)
    assert [(r.warp, r.block) for r in recs[:-1]] == [
        (0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1)]
    flat_shared = M.GLOBAL_WORDS + M.SHARED_WORDS      # CTA 1's shared word 0
    assert recs[4].mem_writes[0] == (flat_shared, 0)


def test_names_are_readable():
    assert name(exec_token(3, 1)) == "EXEC(3,w1)"
    assert name(tok("V", 42)) == "V(0x002a)"
    assert name(tok("TAKEN", 0b0101)) == "TAKEN(0101)"
    assert name(tok("HALT")) == "HALT"


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t[:-1], "stream ends"),
    (lambda t: t + [tok("HALT")], "tokens after HALT"),
    (lambda t: [exec_token(1, 0)] + t[1:], "cannot run block 1"),
    (lambda t: [exec_token(0, 3)] + t[1:], "does not have"),
    (lambda t: t[:1] + [tok("HALT")] + t[2:], "expected V"),
])
def test_decoder_rejects_broken_traces(mutate, message):
    prog = assemble(LOOP)
    trace = expected_trace(run_launch(prog, 1, 3).events)
    with pytest.raises(ProtocolError, match=message):
        decode_trace(decode_prompt(encode_prompt(prog, 1, 3)), mutate(trace))


def test_decoder_rejects_broken_prompt():
    prog = assemble(LOOP)
    p = encode_prompt(prog, 1, 3)
    with pytest.raises(ProtocolError, match="expected GO"):
        decode_prompt(p[:-1] + [tok("HALT")])
