"""Barriers at high block numbers in CTAs of several warps (issue 36): the fault detector
(machine.barriers) gated its per-lane pc counts and its divergence step with a `big` of
64 while block numbers reach 127, so a warp waiting at a barrier whose target is block
65 or above trapped `TRAP(barrier, ...)` while the CTA's other warps still ran (the
float dot kernel of the third probe, blocks of 8 and 16: float adds and multiplies are
~40-block routines, which push the barriers past block 64). Blocks of 4 passed: one
warp per CTA arrives at once, and a release never trapped."""

import numpy as np
import pytest

from qgpu.cli import main
from qgpu.cuda import compile as compile_cuda
from qgpu.interp import run_launch
from qgpu.isa.faults import Fault
from qgpu.isa.program import Bar, Block, Br, Exit, Imm, Instr, Jmp, Program, Reg
from qgpu.protocol import expected_trace, tok
from qgpu.protocol.vocab import kind_of
from qgpu.runtime.check import forced_launch
from qgpu.runtime.generate import generate_launch

pytestmark = pytest.mark.slow

SHAPES = ((1, 8), (1, 16), (2, 8))  # 2 and 4 warps per CTA; 2 CTAs of 2 warps


@pytest.fixture(scope="module")
def machine():
    from qgpu.runtime.compiled import load_machine

    return load_machine(progress=False)


def _padded(size: int, placed: dict[int, Block]) -> Program:
    """A program of `size` blocks: block 0 and those placed, the rest never reached."""
    blocks = [Block([], Exit(), frozenset()) for _ in range(size)]
    for index, block in placed.items():
        blocks[index] = block
    return Program(blocks, name="high")


def _warp_split(first: int, others: int) -> Block:
    """Warp 0 branches to `first`, the other warps to `others` (warp 0 arrives first)."""
    return Block([[Instr("warpid", 1, ())], [Instr("setne", 2, (Reg(1), Imm(0)))]],
                 Br(Reg(2), others, first), frozenset({1, 2}))


def _work(target: int) -> Block:
    return Block([[Instr("tid", 3, ())], [Instr("add", 4, (Reg(3), Imm(7)))]], Jmp(target),
                 frozenset({3, 4}))


CLEAN = {  # every lane waits at the same barrier: the launch runs to HALT
    "bar-at-64": _padded(66, {0: Block([], Jmp(64), frozenset()),
                              64: Block([], Bar(65), frozenset())}),
    "bar-at-126": _padded(128, {0: _warp_split(100, 90), 90: _work(100),
                                100: Block([], Bar(126), frozenset())}),
    "two-bars-high": _padded(128, {0: _warp_split(70, 80), 80: _work(70),
                                   70: Block([], Bar(71), frozenset()),
                                   71: _work(120), 120: Block([], Bar(127), frozenset())}),
}
DIVERGENT = {  # warp 0 waits at block 101, the others at 127: TRAP V(101) V(127)
    "bars-101-127": _padded(128, {0: _warp_split(100, 110),
                                  100: Block([], Bar(101), frozenset()),
                                  110: Block([], Bar(127), frozenset())}),
}


@pytest.mark.parametrize("grid, block", SHAPES)
@pytest.mark.parametrize("name", CLEAN)
def test_barriers_past_block_64_release_without_a_trap(machine, name, grid, block):
    program = CLEAN[name]
    want = expected_trace(run_launch(program, grid, block).events)
    forced_launch(machine, program, grid, block, [])
    run = generate_launch(machine, program, grid, block, [])
    assert run.trace == want and run.trace[-1] == tok("HALT")


@pytest.mark.parametrize("grid, block", SHAPES)
def test_divergent_barriers_past_block_64_trap_with_both_blocks(machine, grid, block):
    program = DIVERGENT["bars-101-127"]
    with pytest.raises(Fault) as fault:
        run_launch(program, grid, block)
    want = expected_trace(fault.value.events)
    forced_launch(machine, program, grid, block, [])
    run = generate_launch(machine, program, grid, block, [])
    assert run.trace == want and kind_of(run.trace[-3])[0] == "TRAP"
    assert [kind_of(t) for t in run.trace[-2:]] == [("V", 101), ("V", 127)]


DOT = """
__global__ void dot_product_kernel(const float* A, const float* B, float* result, int N) {
    extern __shared__ float cache[];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    float temp = 0.0f;
    if (i < N) temp = A[i] * B[i];
    cache[tid] = temp;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) cache[tid] += cache[tid + s];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(result, cache[0]);
}
"""


@pytest.mark.parametrize("grid, block", ((2, 4), (2, 8), (1, 16)))
def test_float_dot_kernel_checks_on_the_model(tmp_path, capsys, grid, block):
    """The probe's kernel shape (its grid-stride form needs 16 registers on this
    machine, so one product per thread): --check, the model against the interpreter."""
    path = tmp_path / "dot.cu"
    path.write_text(DOT)
    n = grid * block
    a = ",".join(str(x * 0.5) for x in range(1, n + 1))
    assert main(["run", str(path), "--grid", str(grid), "--block", str(block),
                 "--shared-bytes", str(4 * block), "--arg", f"A={a}",
                 "--arg", "B=" + ",".join(["2"] * n), "--arg", "result=zeros:1",
                 "--arg", f"N={n}", "--engine", "model", "--check", "--json"]) == 0
    assert f'"result": [{float(n * (n + 1) / 2)}]' in capsys.readouterr().out.replace(
        "\n", "").replace("  ", "")


def test_the_dot_kernel_compiles_to_barriers(tmp_path):
    """The test above runs barriers in CTAs of several warps (not a kernel without)."""
    kernel = compile_cuda(DOT).get_function("dot_product_kernel")
    program = kernel.link(2, 8, [np.zeros(16, np.float32), np.zeros(16, np.float32),
                                 np.zeros(1, np.float32), 16])[0]
    assert sum(isinstance(b.terminator, Bar) for b in program.blocks) >= 2
