"""cuda.codegen: the pipeline's last steps (exits threaded, emission)."""

import numpy as np

from qgpu.cuda.codegen import thread_exits
from qgpu.cuda.ir import CondBr, Goto, Op, Ret, V
from qgpu.cuda.schedule import MBlock
from qgpu.isa import Exit, Imm, Jmp

from .helpers import i32, launch

DOT = """__global__ void dot(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, a[i] * b[i]);
}"""


def test_jump_to_an_empty_exit_becomes_exit_and_unreached_blocks_go():
    op = Op("add", V(1), (V(1), Imm(1)))
    blocks = [MBlock("a", [[op]], CondBr(V(1), "b", "c")), MBlock("b", [[op]], Goto("d")),
              MBlock("c", [[op]], Goto("d")), MBlock("d", [], Ret())]
    out = thread_exits(blocks)
    assert [mb.name for mb in out] == ["a", "b", "c"]
    assert all(isinstance(mb.term, Ret) for mb in out[1:])


def test_an_empty_exit_reached_by_a_branch_stays():
    op = Op("add", V(1), (V(1), Imm(1)))
    blocks = [MBlock("a", [[op]], CondBr(V(1), "b", "c")), MBlock("b", [[op]], Goto("c")),
              MBlock("c", [], Ret())]
    out = thread_exits(blocks)
    assert [mb.name for mb in out] == ["a", "b", "c"]
    assert isinstance(out[1].term, Ret)


def test_dot_product_ends_in_exit_without_an_empty_block():
    a, b, out = i32([1, 2, 3]), i32([4, 5, 6]), np.zeros(1, np.int32)
    res, kernel = launch(DOT, "dot", 1, 3, a, b, out, 3)
    assert out[0] == 32
    blocks = kernel.program.blocks
    jumps_to_empty_exit = [bi for bi, blk in enumerate(blocks) if isinstance(
        blk.terminator, Jmp) and not blocks[blk.terminator.target].stages
        and isinstance(blocks[blk.terminator.target].terminator, Exit)]
    assert jumps_to_empty_exit == []
    assert res.tokens <= 47      # the seed wrote this launch in 47 tokens
