"""interp.races: on launches compiled from CUDA the interpreter reports two warps of a
block touching one shared word between barriers, one of them writing (CUDA orders a
block's warps only at barriers), naming both warps, blocks and the word; machine programs
keep the ISA's deterministic schedule; atomics, reads and same-value writes do not race."""

import numpy as np
import pytest

import qgpu
from qgpu.interp import run_launch
from qgpu.interp.races import RaceError
from qgpu.isa.asm import assemble

LOCKSTEP_TAIL = """__global__ void reduce5(const int *in, int *out) {
  __shared__ int sdata[16];
  unsigned tid = threadIdx.x;
  sdata[tid] = in[tid];
  __syncthreads();
  if (tid < 8) {             // the last warp's unrolled tail, no barrier: 32-lane code
    volatile int *s = sdata;
    s[tid] += s[tid + 8];
    s[tid] += s[tid + 4];
    s[tid] += s[tid + 2];
    s[tid] += s[tid + 1];
  }
  if (tid == 0) out[0] = sdata[0];
}
"""

SYNCED = """__global__ void reduce(const int *in, int *out) {
  __shared__ int sdata[16];
  unsigned tid = threadIdx.x;
  sdata[tid] = in[tid];
  __syncthreads();
  for (unsigned s = 8; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[0] = sdata[0];
}
"""


def launch(src, name, block, *args):
    return qgpu.compile(src, engine="interp").get_function(name)(1, block, list(args))


def test_warp_synchronous_code_written_for_32_lanes_is_a_race():
    data = np.array([1, -2, 3, -4, 5, -6, 7, -8, 9, -10, 11, -12, 13, -14, 15, -50], np.int32)
    with pytest.raises(RaceError) as e:
        launch(LOCKSTEP_TAIL, "reduce5", 16, data, np.zeros(1, np.int32))
    msg = str(e.value)
    assert "data race on shared word" in msg and "warp 0" in msg and "warp 1" in msg
    assert "no __syncthreads()" in msg


def test_the_same_reduction_with_barriers_gives_the_sum():
    data = np.arange(16, dtype=np.int32) * 7 - 40
    out = np.zeros(1, np.int32)
    launch(SYNCED, "reduce", 16, data, out)
    assert out[0] == data.sum()


def test_atomics_reads_and_equal_writes_from_several_warps_do_not_race():
    src = """__global__ void k(int *out) {
  __shared__ int count, flag, seed;
  if (threadIdx.x == 0) { count = 0; flag = 0; seed = 5; }
  __syncthreads();
  atomicAdd(&count, 1);
  flag = 1;                       // every warp writes the same value
  int s = seed;                   // every warp reads
  __syncthreads();
  if (threadIdx.x == 0) { out[0] = count; out[1] = flag; out[2] = s; }
}
"""
    out = np.zeros(3, np.int32)
    launch(src, "k", 16, out)
    assert out.tolist() == [16, 1, 5]


def test_machine_programs_keep_the_isas_order():
    # warp 0 stores, warp 1 loads the word without a barrier: defined by the ISA's schedule
    prog = assemble("block 0:\n  tid r1\n  setlt.u r2, r1, 4\n  br r2, 1, 2\n"
                    "block 1:\n  st.shared [0], r1\n  exit\n"
                    "block 2:\n  ld.shared r3, [0]\n  shl r4, r1, 2\n  jmp 3\n"
                    "block 3:\n  st.global [r4], r3\n  exit\n")
    res = run_launch(prog, grid=1, block=8)
    assert res.memory[4:8] == [3, 3, 3, 3]
