"""No drift: a launch of more than 10,000 trace tokens (a loop with loads, stores and
divergent exits over 300 iterations) is written by the model token for token, and the
final memory read from the model's state equals the interpreter's."""

import pytest

from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch

pytestmark = pytest.mark.slow

# Lane L loops 290 + L times: each pass reads its word, mixes in the pass count and the
# lane, and stores it back; the lanes leave the loop one by one (divergence), then
# reconverge at the exit block.
LONG_LOOP = """
block 0:
  tid r1
  add r6, r1, r1
  add r6, r6, r6
  add r7, r1, 290
  .writeback r1, r6, r7
  jmp 1
block 1:
  add r2, r2, 1
  ld.global r3, [r6+0]
  xor r4, r3, r2
  add r4, r4, r1
  .writeback r2, r4
  jmp 2
block 2:
  st.global [r6+0], r4
  setlt.u r5, r2, r7
  .writeback r5
  br r5, 1, 3
block 3:
  exit
"""


def test_ten_thousand_tokens_without_drift():
    machine = load_machine(progress=False)
    prog = assemble(LONG_LOOP)
    memory = [0x9E3779B9, 7, 0xFFFFFFFF, 0x80000000]
    res = run_launch(prog, 1, 4, memory=memory)
    want = expected_trace(res.events)
    assert len(want) >= 10_000
    run = generate_launch(machine, prog, 1, 4, memory, max_tokens=len(want) + 8)
    assert run.trace == want
    assert run.memory[:len(memory)] == res.memory[:len(memory)]
