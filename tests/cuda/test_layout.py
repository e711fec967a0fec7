"""cuda.layout: block order that makes min-PC SIMT reconverge where a real GPU does."""

import numpy as np
import pytest

from qgpu.cuda import layout
from qgpu.cuda.ir import BasicBlock, CondBr, Function, Goto, Ret, V
from qgpu.errors import CompileError

from .helpers import i32, launch


def test_divergent_branches_reconverge_before_a_shuffle():
    src = """__global__ void k(int *a) {
      int t = threadIdx.x;
      int x = a[t];
      if (x & 1) { x = x * 3 + 1; if (x > 10) x -= 7; } else { x = x / 2; }
      a[t] = __shfl_xor_sync(0xffffffff, x, 1) + __ballot_sync(0xffffffff, x > 5);
    }"""
    vals = [3, 8, 11, 6, 1, 2, 9, 4]
    a = i32(vals)

    def f(x):
        if x & 1:
            x = x * 3 + 1
            return x - 7 if x > 10 else x
        return x // 2
    xs = [f(v) for v in vals]
    launch(src, "k", 1, 8, a)
    ballot = sum(1 << j for j in range(8) if xs[j] > 5)    # CUDA's warp: all 8 threads
    for t in range(8):
        assert a[t] == xs[t ^ 1] + ballot


def test_loop_with_divergent_trip_counts_reconverges_at_its_exit():
    src = """__global__ void k(int *a) {
      int t = threadIdx.x, n = a[t], s = 0;
      for (int i = 0; i < n; i++) { s += i; if (s > 20) break; }
      a[t] = s + __shfl_down_sync(0xffffffff, s, 1, 4) * 100;
    }"""
    vals = [0, 3, 9, 5]
    a = i32(vals)

    def f(n):
        s = 0
        for i in range(n):
            s += i
            if s > 20:
                break
        return s
    ss = [f(v) for v in vals]
    launch(src, "k", 1, 4, a)
    assert list(a) == [ss[t] + (ss[t + 1] if t < 3 else ss[t]) * 100 for t in range(4)]


def _fn(edges: dict[str, list[str]]) -> Function:
    blocks = {}
    for name, succ in edges.items():
        term = Ret() if not succ else Goto(succ[0]) if len(succ) == 1 else \
            CondBr(V(1), succ[0], succ[1])
        blocks[name] = BasicBlock(name, term=term)
    return Function("f", blocks, "entry")


def test_order_is_topological_with_contiguous_loops():
    fn = _fn({"entry": ["x", "h"], "exit": [], "h": ["b1", "exit"], "b1": ["b2", "latch"],
              "b2": ["latch"], "latch": ["h"], "x": ["h"]})
    order = layout.block_order(fn)
    pos = {n: i for i, n in enumerate(order)}
    assert order[0] == "entry" and pos["x"] < pos["h"]
    loop = ["h", "b1", "b2", "latch"]
    idx = sorted(pos[n] for n in loop)
    assert idx == list(range(idx[0], idx[0] + 4)) and pos["h"] == idx[0]
    assert pos["exit"] > max(idx)


def test_irreducible_control_flow_is_rejected():
    fn = _fn({"entry": ["a", "b"], "a": ["b"], "b": ["a", "end"], "end": []})
    with pytest.raises(CompileError, match="irreducible"):
        layout.block_order(fn)


def test_nested_loops_run_to_completion():
    src = """__global__ void k(int *a) {
      int t = threadIdx.x, s = 0;
      for (int i = 0; i < a[t]; i++) for (int j = i; j < 4; j++) s += i * j + 1;
      a[t] = s;
    }"""
    a = i32([0, 1, 3, 6])
    launch(src, "k", 1, 4, a)
    assert list(a) == [sum(i * j + 1 for i in range(n) for j in range(i, 4))
                       for n in [0, 1, 3, 6]]
    assert np.dtype(a.dtype) == np.int32
