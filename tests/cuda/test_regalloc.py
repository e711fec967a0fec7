"""cuda.regalloc: 15 registers, pressure, clear errors."""

import pytest

import qgpu
from qgpu.cuda import codegen
from qgpu.cuda.regalloc import RegisterError, allocate
from qgpu.cuda.schedule import schedule

from .helpers import i32, launch


def wide_kernel(n: int) -> str:
    loads = "".join(f"  int v{k} = a[t + {4 * k}] * {k + 2};\n" for k in range(n))
    mix = " ^ ".join(f"(v{k} + v{(k + 1) % n})" for k in range(n))
    return f"__global__ void k(int *a, int *out) {{\n  int t = threadIdx.x;\n{loads}" \
           f"  __syncthreads();\n  out[t] = {mix};\n}}\n"


def test_many_simultaneously_live_values_fit():
    n = 11
    src = wide_kernel(n)
    a = i32(range(4 * n))
    out = i32([0] * 4)
    res, k = launch(src, "k", 1, 4, a, out)
    assert k.template.pressure >= n
    for t in range(4):
        v = [(t + 4 * j) * (j + 2) for j in range(n)]
        acc = 0
        for j in range(n):
            acc ^= v[j] + v[(j + 1) % n]
        assert out[t] == acc
    used = {ins.dst for b in k.program.blocks for st in b.stages for ins in st if ins.dst}
    assert used <= set(range(1, 16))


def test_too_many_live_values_spill_instead_of_a_refusal():
    """17 values alive at once were refused before register spills (cuda.spill, whose tests
    run such kernels); the allocator alone still raises its clear error."""
    module = qgpu.compile(wide_kernel(17), engine="interp")
    assert module.get_function("k").template.stats["local_words"] > 0
    fn, _ = codegen._middle(module.ptx_module, "_Z1kPiS_", "k", None)
    with pytest.raises(RegisterError, match=r"kernel k: needs more than 15 registers "
                                            r"\(\d+ values live"):
        allocate(codegen.thread_exits(schedule(fn)), "k")


def test_live_out_registers_are_the_writeback_set():
    src = """__global__ void k(int *a) {
      int t = threadIdx.x;
      int x = a[t] * 3;
      __syncthreads();
      a[t] = x + 1;
    }"""
    res, k = launch(src, "k", 1, 4, i32([1, 2, 3, 4]))
    first = k.program.blocks[0]
    assert len(first.writeback) == 1
