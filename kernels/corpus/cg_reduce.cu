// A block sum with cooperative groups' thread block (this_thread_block, sync,
// thread_rank) and the _system atomic that merges the blocks' partial sums.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cstdio>

namespace cg = cooperative_groups;

__global__ void blockSum(const int *in, int *total, int n) {
  __shared__ int s[8];
  cg::thread_block block = cg::this_thread_block();
  unsigned r = block.thread_rank();
  unsigned i = blockIdx.x * block.size() + r;
  s[r] = i < n ? in[i] : 0;
  block.sync();
  for (unsigned stride = block.size() / 2; stride > 0; stride /= 2) {
    if (r < stride) s[r] += s[r + stride];
    block.sync();
  }
  if (r == 0) atomicAdd_system(total, s[0]);
}

int main() {
  int *d_in, *d_total;
  cudaMalloc(&d_in, 16 * sizeof(int));
  cudaMalloc(&d_total, sizeof(int));
  blockSum<<<2, 8>>>(d_in, d_total, 16);
  cudaDeviceSynchronize();
  printf("ok\n");
  return 0;
}
