"""qgpu/cuda/include/cooperative_groups.h: thread_block_tile<N> / tiled_partition<N> for
N = 1, 2, 4 (inside a machine warp) and 8, 16 (CUDA's 32-lane warp operations) against
numpy oracles of CUDA's definitions, in 1-D, 2-D and 3-D blocks; tiles past CUDA's warp
refused naming the kernel and line, alone."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import CompileError

SRC = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <unsigned N>
__global__ void tiles(const int *in, int *out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<N> t = cg::tiled_partition<N>(block);
  unsigned r = block.thread_rank(), w = block.size();
  int v = in[r];
  t.sync();
  out[0 * w + r] = t.thread_rank() | t.size() << 4 | t.meta_group_rank() << 8
                   | t.meta_group_size() << 12;
  out[1 * w + r] = t.shfl(v, 1 % N);
  out[2 * w + r] = t.shfl_up(v, 1);
  out[3 * w + r] = t.shfl_down(v, 1);
  out[4 * w + r] = t.shfl_xor(v, N > 1 ? 1 : 0);
  out[5 * w + r] = t.ballot(v > 0) | t.any(v > 0) << 8 | t.all(v > 0) << 9;
  out[6 * w + r] = __float_as_int(t.shfl_down(__int_as_float(v) , N / 2));
}
template __global__ void tiles<1>(const int *, int *);
template __global__ void tiles<2>(const int *, int *);
template __global__ void tiles<4>(const int *, int *);
template __global__ void tiles<8>(const int *, int *);
template __global__ void tiles<16>(const int *, int *);
__global__ void wide(int *out) {
  cg::thread_block_tile<64> t = cg::tiled_partition<64>(cg::this_thread_block());
  out[threadIdx.x] = t.thread_rank();
}
"""


def oracle(n: int, v: np.ndarray) -> np.ndarray:
    w = len(v)
    r = np.arange(w)
    base, rank = r - r % n, r % n
    out = np.zeros((7, w), np.int64)
    out[0] = rank | n << 4 | (r // n) << 8 | (-(-w // n)) << 12
    out[1] = v[base + 1 % n]
    out[2] = np.where(rank >= 1, v[np.maximum(r - 1, 0)], v)
    out[3] = np.where(rank + 1 < n, v[np.minimum(r + 1, w - 1)], v)
    out[4] = v[base + (rank ^ (1 if n > 1 else 0))]
    for i in range(w):
        bits = sum(1 << j for j in range(n) if v[base[i] + j] > 0)
        out[5, i] = bits | (bits != 0) << 8 | (bits == (1 << n) - 1) << 9
    out[6] = np.where(rank + n // 2 < n, v[np.minimum(r + n // 2, w - 1)], v)
    return out.astype(np.int64).astype(np.int32).reshape(-1)


@pytest.fixture(scope="module")
def mod():
    return qgpu.compile(SRC, "tiles.cu", engine="interp")


@pytest.mark.parametrize("n, block", [
    (n, block) for n in (1, 2, 4) for block in (8, (4, 2), (2, 2, 3))] + [
    (n, block) for n in (8, 16) for block in (16, (8, 2), (2, 2, 4))])
def test_tiles_compute_as_cuda_defines_them(mod, n, block):
    threads = int(np.prod(block))
    v = np.random.default_rng(n * 10 + threads).integers(-9, 9, threads, dtype=np.int32)
    out = np.zeros(7 * threads, np.int32)
    mod.get_function(f"tiles<{n}>")(1, block, [v, out])
    assert list(out) == list(oracle(n, v))


def test_a_larger_tile_is_refused_naming_its_line_and_siblings_run(mod):
    with pytest.raises(CompileError, match=r"tiles.cu:25: kernel wide: tiled_partition<64>: "
                                           r"a tile has 1, 2, 4, 8, 16 or 32 threads"):
        mod.get_function("wide")
    assert "tiles<4>" in mod.kernel_names
