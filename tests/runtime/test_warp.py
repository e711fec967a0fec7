"""Shuffles and ballot on the compiled model (machine.warp), token-exact against the
interpreter: every shuffle mode with deltas/lanes 0..5, 31, 32 and beyond, the clamp and
segment values the front end emits for widths 1, 2, 4 and 32 and arbitrary ones, operands
from registers, immediates and forwarded results, inactive source lanes (block 3,
divergent branches, forwarded operands of inactive lanes), ballot and the vote.any/all
sequences the front end lowers to; the suite's one-warp shuffle and vote kernels when
every operation they need is in the circuit."""

import pytest

from qgpu.circuit.machine.spec import SUPPORTED_OPS
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import expected_trace
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch

pytestmark = pytest.mark.slow

SETUP = """
block 0:
  tid r1
  brev r2, r1
  xor r3, r2, 0x9e3779b9
  add r2, r3, r1
  .writeback r1, r2
  jmp 1
"""


def width_c(mode: str, width: int) -> int:
    """The c operand the front end emits for __shfl*_sync(..., width) (docs/cuda.md)."""
    return ((32 - width) & 31) << 8 | (0 if mode == "up" else 31)


DELTAS = (0, 1, 2, 3, 4, 5, 31, 32, 0xFFFFFFFF, 0x80000002)
ODD_C = (0x0D1E, 0x1302, 0xFFFFFFFF, 0x2, 0x0F05, 0x1E00, 0x1F, 0x11C1F)


def sweep(mode: str) -> str:
    """SETUP, then blocks of four shuffles of r2 (a register) for every delta and c."""
    cs = [width_c(mode, w) for w in (1, 2, 4, 32)] + list(ODD_C)
    shuffles = [(b, c) for c in cs for b in DELTAS]
    text = SETUP
    for k in range(0, len(shuffles), 4):
        block = 1 + k // 4
        group = shuffles[k:k + 4]
        lines = [f"  shfl.{mode} r{4 + i}, r2, {b}, {c}" for i, (b, c) in enumerate(group)]
        regs = ", ".join(f"r{4 + i}" for i in range(len(group)))
        last = k + 4 >= len(shuffles)
        text += (f"block {block}:\n" + "\n".join(lines) + f"\n  .writeback {regs}\n"
                 + ("  exit\n" if last else f"  jmp {block + 1}\n"))
    return text


FORWARDED = SETUP + """
block 1:
  add r4, r2, 7
  shfl.down r5, r4, 1, 0x1c1f
  shfl.bfly r6, r5, 2, 0x1f
  shfl.up r7, r6, 3, 0
  .writeback r4, r5, r6, r7
  jmp 2
block 2:
  xor r8, r1, 3
  shfl.idx r9, r2, r8, 0x1c1f
  and r10, r1, 1
  shfl.down r11, r9, r10, 0x1e1f
  .writeback r8, r9, r10, r11
  jmp 3
block 3:
  add r12, r1, 0x1c1d
  shfl.bfly r13, r2, 1, r12
  shfl.idx r14, r13, r1, r12
  shfl.up r15, r14, r1, 0x1c00
  .writeback r12, r13, r14, r15
  exit
"""

DIVERGENT = SETUP + """
block 1:
  setlt.u r3, r1, 2
  br r3, 2, 3
block 2:
  add r8, r2, 1
  shfl.down r4, r8, 2, 0x1f
  shfl.down r5, r8, 1, 0x1f
  shfl.idx r6, r2, 3, 0x1f
  .writeback r4, r5, r6, r8
  jmp 4
block 3:
  shfl.up r4, r2, 1, 0
  shfl.up r5, r2, 2, 0x1c00
  shfl.bfly r6, r2, 2, 0x1f
  ballot r7, r2
  .writeback r4, r5, r6, r7
  jmp 4
block 4:
  seteq r9, r1, 2
  br r9, 5, 6
block 5:
  shfl.idx r10, r2, 0, 0x1f
  ballot r11, 1
  .writeback r10, r11
  exit
block 6:
  shfl.bfly r10, r4, 1, 0x1c1f
  ballot r11, r10
  shfl.idx r12, r10, 2, 0x1f
  .writeback r10, r11, r12
  exit
"""

BALLOT = SETUP + """
block 1:
  ballot r4, r2
  and r5, r1, 1
  ballot r6, r5
  ballot r7, 0
  .writeback r4, r5, r6, r7
  jmp 2
block 2:
  setgt.u r8, r1, 1
  selp r9, 0x80000000, 0, r8
  ballot r10, r9
  ballot r11, 1
  .writeback r8, r9, r10, r11
  jmp 3
block 3:
  ballot r12, r5
  setne r13, r12, 0
  xor r14, r5, 1
  ballot r15, r14
  .writeback r12, r13, r14, r15
  jmp 4
block 4:
  seteq r3, r15, 0
  ballot r4, 0xffffffff
  ballot r6, r1
  seteq r7, r12, r4
  .writeback r3, r4, r6, r7
  exit
"""

PROGRAMS = {f"sweep_{mode}": sweep(mode) for mode in ("up", "down", "bfly", "idx")}
PROGRAMS.update(forwarded=FORWARDED, divergent=DIVERGENT, ballot=BALLOT)


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


@pytest.mark.parametrize("program", sorted(PROGRAMS))
@pytest.mark.parametrize("block", [4, 3, 2])
def test_warp_program_is_token_exact(machine, program, block):
    prog = assemble(PROGRAMS[program])
    want = expected_trace(run_launch(prog, 1, block).events)
    run = generate_launch(machine, prog, 1, block, max_tokens=len(want) + 8)
    assert run.trace == want


SUITE_KERNELS = ("shfl_broadcast", "shfl_up_down", "shfl_xor_transpose", "allreduce_shfl_xor",
                 "vote_any_all", "reduce_shfl_down", "compact_ballot", "scan_shfl_up",
                 "vote_ballot_group", "vote_group_any_all")


def _suite_cases():
    from qgpu.suite import load_suite

    return [(spec, launch) for spec in load_suite() if spec.name in SUITE_KERNELS
            for launch in spec.launches if launch["grid"] == 1 and launch["block"] <= 4]


@pytest.mark.parametrize("case", _suite_cases(), ids=lambda c: f"{c[0].name}-{c[1]['block']}")
def test_suite_kernel_on_the_model(machine, case):
    import numpy as np

    from qgpu.suite import compiled_module, run_case

    spec, launch = case
    program = compiled_module(spec.source).get_function(spec.kernel).program
    missing = {ins.op for blk in program.blocks for st in blk.stages for ins in st
               } - set(SUPPORTED_OPS)
    if missing:
        pytest.skip(f"needs {sorted(missing)}, not in the circuit yet")
    outputs, expected, _ = run_case(spec, launch, engine="model-check")
    for name, want in expected.items():
        assert np.array_equal(outputs[name], want), name
