// A reduction with cooperative groups' tiles, as the CUDA programming guide teaches it:
// each tile of 4 threads sums its values with shfl_down, the tiles' leaders put their
// partial sums in shared memory by meta_group_rank, thread 0 adds them into the total.
// A second kernel all-reduces pairs (tiles of 2) with shfl_xor.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cstdio>

namespace cg = cooperative_groups;

template <unsigned N>
__device__ int tileSum(cg::thread_block_tile<N> tile, int v) {
  for (int d = tile.size() / 2; d > 0; d /= 2) v += tile.shfl_down(v, d);
  return v;   // the sum at the tile's thread 0
}

__global__ void reduceTiles(const int *in, int *total, int n) {
  __shared__ int partial[4];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<4> tile = cg::tiled_partition<4>(block);
  unsigned i = blockIdx.x * block.size() + block.thread_rank();
  int sum = tileSum(tile, i < n ? in[i] : 0);
  if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = sum;
  block.sync();
  if (block.thread_rank() == 0) {
    int s = 0;
    for (unsigned t = 0; t < tile.meta_group_size(); t++) s += partial[t];
    atomicAdd(total, s);
  }
}

__global__ void pairMax(const int *in, int *out) {
  cg::thread_block_tile<2> pair = cg::tiled_partition<2>(cg::this_thread_block());
  int v = in[threadIdx.x];
  int other = pair.shfl_xor(v, 1);
  out[threadIdx.x] = max(v, other) * 10 + (int)pair.thread_rank();
}

int main() {
  const int n = 16;
  int h[n], *d_in, *d_total, total = 0;
  for (int i = 0; i < n; i++) h[i] = i * i - 20;
  cudaMalloc(&d_in, sizeof h);
  cudaMalloc(&d_total, sizeof(int));
  cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice);
  cudaMemcpy(d_total, &total, sizeof(int), cudaMemcpyHostToDevice);
  reduceTiles<<<2, 8>>>(d_in, d_total, n);
  cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost);
  printf("total %d\n", total);
  return 0;
}
