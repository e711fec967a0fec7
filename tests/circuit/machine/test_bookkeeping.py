"""machine.bookkeeping, read out of the residual stream (probe) while a launch's prompt
and trace are teacher-forced: latches, counters, lane order and value slots at every
position equal what the protocol says they are."""

import pytest

from qgpu.circuit.machine.probe import probe, value_of
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.protocol import encode_prompt, expected_trace
from qgpu.protocol.vocab import fields_of
from qgpu.runtime.compiled import load_machine

pytestmark = pytest.mark.slow

PROGRAM = """
block 0:
  tid r1
  add r2, r1, 3
  st.global [r0+8], r2
  .writeback r1, r2
  jmp 1
block 1:
  setlt.u r3, r1, 1
  .writeback r3
  br r3, 2, 2
block 2:
  exit
"""


def expected(tokens):
    """What each bookkeeping signal must hold, from the token stream alone."""
    cur, rec, count, records, ntid, rows = (0, 0), (0, 0, 0), 0, None, 0, []
    for t in tokens:
        kind, f = fields_of(t)
        if kind == "NTID":
            ntid = f[0] + 1
        if kind == "EXEC":
            cur, records = (f[0], f[2]), 0
        if kind == "ADDR" and records is not None:
            records += 1
        if kind == "V":
            count += 1
        else:
            count, rec = 0, (int(kind == "R"), f[0] if kind == "R" else 0, int(kind == "ADDR"))
        active = [lane for lane in range(4) if cur[1] >> lane & 1]
        nxt = 0
        if count // 2 < len(active):
            nxt = 1 << (2 * active[count // 2] + count % 2)
        rows.append({
            "cur.bits": cur[0] | cur[1] << limits.MODEL_BLOCK_BITS,
            "rec.bits": rec[0] | rec[1] << 1 | rec[2] << 5,
            "count": count if count <= 8 else 9,
            "records": records if records is not None and records <= 12 else 13,
            "present": (1 << ntid) - 1,
            "popc": 1 << (len(active) - 1) if active else 0,
            "value.next": nxt,
            "value.done": int(count >= 2 and count == 2 * len(active)),
        })
    return rows


@pytest.mark.parametrize("ntid", [4, 3])
def test_bookkeeping_signals_at_every_position(ntid):
    machine = load_machine(progress=False)
    prog = assemble(PROGRAM)
    tokens = encode_prompt(prog, 1, ntid) + expected_trace(run_launch(prog, 1, ntid).events)
    names = list(expected(tokens[:1])[0])
    seen = probe(machine.compiled, tokens, names)
    signals = machine.compiled.plan.circuit.signals
    for pos, want in enumerate(expected(tokens)):
        got = {n: value_of(signals[n].kind, seen[n][pos]) for n in names}
        assert got == want, f"position {pos}"
