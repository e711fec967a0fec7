"""Code written for CUDA's 32-lane warp on qgpu's 4-lane warps (issue 33's first step):
a shuffle whose constant offset, xor mask, source lane or width names lanes a 4-lane warp
lacks is refused at compile time, naming the kernel's line it was called from, instead of
running and keeping each lane's own value (a 32-lane tree reduction gave 8 times the
sum). Shuffles written for the machine's warp (offsets from warpSize, broadcasts from
lane 0, xor masks below 4) still run and give a GPU's answer."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import CompileError
from qgpu.isa.limits import LANES

COUNT_32 = """// the 32-lane warp reduction public kernels use
__global__ void count(const int *in, int *out, int n, int k) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  int v = (tid < n && in[tid] == k) ? 1 : 0;
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffff, v, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
"""


def compile_one(src, name="k"):
    return qgpu.compile(src, filename="warp.cu", engine="interp").get_function(name)


def test_a_32_lane_tree_reduction_is_refused_at_the_kernels_line():
    with pytest.raises(CompileError) as e:
        compile_one(COUNT_32, "count")
    msg = str(e.value)
    assert "__shfl_down_sync offset 16 names lanes a 4-lane warp lacks" in msg
    assert "called at warp.cu:6" in msg and "32-lane warp is refused" in msg


@pytest.mark.parametrize("call, what", [
    ("__shfl_xor_sync(0xffffffff, v, 16)", "__shfl_xor_sync lane mask 16"),
    ("__shfl_up_sync(0xffffffff, v, 8)", "__shfl_up_sync offset 8"),
    ("__shfl_sync(0xffffffff, v, 31)", "__shfl_sync source lane 31"),
    ("__shfl_sync(0xffffffff, v, 0, 32)", "__shfl_sync width 32"),
    ("__shfl_down_sync(0xffffffff, v, 1, 16)", "__shfl_down_sync width 16"),
])
def test_every_shuffle_naming_lanes_past_the_warp_is_refused(call, what):
    src = (f"__global__ void k(int *a) {{\n  int v = a[threadIdx.x];\n"
           f"  a[threadIdx.x] = {call};\n}}\n")
    with pytest.raises(CompileError, match=what) as e:
        compile_one(src)
    assert "called at warp.cu:3" in str(e.value)


def test_the_list_says_why_such_a_kernel_does_not_run(tmp_path, capsys):
    from qgpu.cli import main

    path = tmp_path / "count.cu"
    path.write_text(COUNT_32)
    assert main(["run", str(path), "--list"]) == 0
    out = capsys.readouterr().out
    assert "cannot run" in out and "offset 16" in out


def test_shuffles_written_for_the_machines_warp_still_run():
    src = """__global__ void k(const int *in, int *out, int *first) {
  int v = in[threadIdx.x];
  for (int off = warpSize / 2; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffff, v, off);
  int w = __shfl_xor_sync(0xffffffff, in[threadIdx.x], 1);
  first[threadIdx.x] = __shfl_sync(0xffffffff, in[threadIdx.x], 0) + w;
  if ((threadIdx.x & (warpSize - 1)) == 0) out[threadIdx.x / warpSize] = v;
}
"""
    data = np.arange(1, 9, dtype=np.int32) * 3
    out, first = np.zeros(2, np.int32), np.zeros(8, np.int32)
    compile_one(src)(1, 8, [data, out, first])
    assert out.tolist() == [int(data[i:i + LANES].sum()) for i in (0, 4)]
    lanes = np.arange(8)
    assert first.tolist() == (data[lanes // 4 * 4] + data[lanes ^ 1]).tolist()
