"""Issue 27 on the model: a program that fills most of the 128-block ROM (targets up to
block 127 in the block record's V token) is written token for token; a kernel whose
byte and 16-bit stores share words (the front end's load / CAS loop) runs with
engine="model-check"; a float square root (no integer lowering yet) is refused before
any token is fed."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import ProgramError
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.program import Block, Br, Exit, Imm, Instr, Jmp, Program, Reg
from qgpu.protocol import expected_trace
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch
from tests.cuda.test_narrow_store import BYTES

pytestmark = pytest.mark.slow


def long_program(n: int = limits.MODEL_ROM_BLOCKS) -> Program:
    """Block 0 sends odd lanes to block n - 2 (a far target), even lanes through the
    chain 1..n-3 that mixes r1; they reconverge at n - 2, which stores; n - 1 exits."""
    blocks = [Block([[Instr("tid", 1)], [Instr("and", 2, (Reg(1), Imm(1)))]],
                    Br(Reg(2), n - 2, 1))]
    for b in range(1, n - 2):
        blocks.append(Block([[Instr("add", 1, (Reg(1), Imm(b * 7919)))],
                             [Instr("xor", 1, (Reg(1), Imm(b << 3)))]], Jmp(b + 1)))
    blocks.append(Block([[Instr("tid", 2)], [Instr("shl", 3, (Reg(2), Imm(2)))],
                         [Instr("st.global", None, (Reg(3), Reg(1)))]], Jmp(n - 1)))
    blocks.append(Block([], Exit()))
    return Program(blocks, name="rom")


def test_a_program_of_the_whole_rom_on_the_model():
    machine = load_machine(progress=False)
    prog = long_program()
    assert len(prog.blocks) == limits.MODEL_ROM_BLOCKS
    res = run_launch(prog, 1, 4, memory=[0] * 4)
    want = expected_trace(res.events)
    run = generate_launch(machine, prog, 1, 4, [0] * 4, max_tokens=len(want) + 8)
    assert run.trace == want
    assert run.memory[:4] == res.memory[:4]


def test_byte_stores_on_the_model():
    kernel = qgpu.compile(BYTES, filename="bytes.cu").get_function("k")
    src = np.array([1, -2, 300, 70000, -129, 5, 255, 256], np.int32)
    out = np.full(16, 0xA5A5A5A5, np.uint32)
    kernel(1, 6, [out, src], engine="model-check")
    want = np.full(16, 0xA5A5A5A5, np.uint32)
    kernel(1, 6, [want, src], engine="interp")
    assert out.tolist() == want.tolist()
    assert out.view(np.uint8)[:6].tolist() == [(int(v) * 3 + 1) & 255 for v in src[:6]]


def test_float_ops_without_an_integer_lowering_are_refused_on_the_model():
    src = """__global__ void k(unsigned *o) {
      ((float *)o)[0] = sqrtf(((float *)o)[1]); }"""
    kernel = qgpu.compile(src, filename="sqrt.cu").get_function("k")
    with pytest.raises(ProgramError, match=r"k \(.*sqrt.cu:2\): float32 operation 'sqrt.f32' "
                                           "has no integer lowering"):
        kernel(1, 1, [np.zeros(4, np.uint32)], engine="model")
