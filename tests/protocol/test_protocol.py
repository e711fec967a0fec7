"""Launch protocol v1: vocabulary layout, prompt round trip and operand selectors, the
trace oracle and its checking decoder, protocol errors."""

import pytest

from qgpu.errors import ProtocolError
from qgpu.interp import run_launch
from qgpu.isa import limits
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
from qgpu.protocol.prompt import operand_selectors
from qgpu.protocol.vocab import KINDS, SEL_FWD, SEL_IMM, count, fields_of, pack, unpack

LOOP = """
block 0:
  tid r1
  mov r2, 0
  mov r3, 0
  jmp 1
block 1:
  add r3, r3, r2
  add r2, r2, 1
  setle.u r4, r2, r1
  br r4, 1, 2
block 2:
  shl r5, r1, 2
  atom.global.add r6, [r5+64], r3
  st.global [r5], r3
  exit
"""


def test_vocabulary_is_a_bijection():
    for k in KINDS:
        for arg in {0, k.count - 1}:
            fields = unpack(k.name, arg)
            t = tok(k.name, *fields)
            assert kind_of(t) == (k.name, arg) and fields_of(t) == (k.name, fields)
            assert pack(k.name, *fields) == arg
    assert tok("V", 0x1234) == 0x1234
    assert tok("HALT") + 1 + count("TRAP") == VOCAB_SIZE  # the TRAP ids follow HALT (v4)
    with pytest.raises(ValueError):
        tok("EXEC", limits.ROM_BLOCKS, 0, 0, 0)
    with pytest.raises(ValueError):
        kind_of(VOCAB_SIZE)


def test_prompt_round_trip():
    prog = assemble(LOOP)
    mem = [5, 0, 0xFFFFFFFF, 0x12345678]
    launch = decode_prompt(encode_prompt(prog, 2, 3, mem))
    assert launch.program.blocks == prog.blocks
    assert (launch.grid, launch.block) == (2, 3)
    assert launch.memory[:4] == mem and launch.memory[4:] == [0] * (limits.MODEL_GLOBAL_WORDS - 4)


def test_operand_selectors_forward_from_earlier_stages_only():
    blk = assemble("""
block 0:
  tid r1
  mov r2, 7
  add r1, r1, r2
  add r4, r1, r5
  exit
""").blocks[0]
    sels = operand_selectors(blk)
    S = limits.SLOTS
    assert sels[0] == () and sels[S] == (SEL_IMM,)
    assert sels[2 * S] == (SEL_FWD + 0, SEL_FWD + S)      # r1 from stage 0, r2 from stage 1
    assert sels[3 * S] == (SEL_FWD + 2 * S, 5)            # r1 forwarded, r5 from the file


def test_prompt_rejects_selectors_that_do_not_match():
    prog = assemble(LOOP)
    p = encode_prompt(prog, 1, 3)
    i = p.index(tok("SRCAB", SEL_FWD + 1, 1))          # block 1's setle.u r4, r2, r1
    p[i] = tok("SRCAB", 2, 1)                           # claims r2 from the register file
    with pytest.raises(ProtocolError, match="selectors do not match"):
        decode_prompt(p)


def test_trace_layout_and_decoding():
    prog = assemble(LOOP)
    res = run_launch(prog, 1, 3)
    trace = expected_trace(res.events)
    assert trace[0] == tok("EXEC", 0, 0, 0b0111, 0) and trace[-1] == tok("HALT")
    recs = decode_trace(decode_prompt(encode_prompt(prog, 1, 3)), trace)
    assert [r.block for r in recs[:-1]] == [e.block for e in res.events]
    # block 0 returns r1, r2, r3 (live into the loop): 3 x (R + 3 lanes x 2) + END
    assert sorted(recs[0].registers) == [1, 2, 3]
    assert recs[1].position == 1 + 3 * 7 + 1
    assert recs[1].taken == (1, 2)
    last = recs[-2]
    assert last.block == 2 and last.active == (0, 1, 2)
    assert last.mem_writes == [(16, 0), (17, 1), (18, 3), (0, 0), (1, 1), (2, 3)]


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
    flat_shared = limits.MODEL_GLOBAL_WORDS + limits.MODEL_SHARED_WORDS      # CTA 1's shared word 0
    assert recs[4].mem_writes[0] == (flat_shared, 0)


def test_names_are_readable():
    assert name(tok("EXEC", 3, 1, 0b1011, 0)) == "EXEC(3,w1,013)"
    assert name(tok("EXEC", 3, 1, 0b1011, 2)) == "EXEC(3,w1,013,e2)"
    assert name(tok("V", 42)) == "V(0x002a)"
    assert name(tok("END", 0b0101)) == "END(02)"
    assert name(tok("SRCAB", 3, SEL_IMM)) == "SRCAB(r3,imm)"
    assert name(tok("HALT")) == "HALT"


@pytest.mark.parametrize("mutate, message", [
    (lambda t: t[:-1], "stream ends"),
    (lambda t: t + [tok("HALT")], "tokens after HALT"),
    (lambda t: [tok("EXEC", 1, 0, 7, 0)] + t[1:], "machine schedules block 0"),
    (lambda t: [tok("EXEC", 0, 0, 3, 0)] + t[1:], "machine schedules block 0"),
    (lambda t: t[:1] + [tok("HALT")] + t[2:], "expected R"),
    (lambda t: t[:1] + [tok("R", 2)] + t[2:], "writes back r1 next"),
    (lambda t: [tok("HALT")], "can still run"),
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


def test_rom_records_fit_the_conv_window():
    """Block records are BLK V(wb) TRM V(targets) and IMM names its own row: the circuit writes
    every ROM row at a record's last token with all fields within 3 tokens back."""
    prog = assemble(LOOP)
    p = encode_prompt(prog, 1, 3)
    i = p.index(tok("BLK", 2))
    assert [fields_of(t)[0] for t in p[i:i + 4]] == ["BLK", "V", "TRM", "V"]
    assert p[i + 1] == tok("V", 0)                      # block 2 writes nothing back
    j = p.index(tok("IMM", 1, 1, 1))                    # block 1's add r2, r2, 1
    assert p[j + 1:j + 3] == [tok("V", 1), tok("V", 0)]
    p[j] = tok("IMM", 1, 0, 1)
    with pytest.raises(ProtocolError, match="IMM of instruction"):
        decode_prompt(p)
