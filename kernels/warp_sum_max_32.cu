// CUDA's 32-lane warp reduction, written for warpSize 32: offsets 16, 8, 4, 2, 1 of
// __shfl_down_sync, then a broadcast from lane 0 with __shfl_sync. The members are the
// warp's threads that exist (a CTA of fewer than 32 threads is one partial warp), so the
// mask names them and a lane combines a shuffled value only from a member: sum[i] and
// max[i] are the totals of thread i's warp, last[i] the input of its last member.
__global__ void warp_sum_max_32(const int* in, int* sum, int* max_out, int* last) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % warpSize;
  unsigned first = threadIdx.x - lane;
  unsigned members = blockDim.x - first < warpSize ? blockDim.x - first : warpSize;
  unsigned mask = members == 32 ? 0xffffffffu : (1u << members) - 1u;
  int s = in[i], m = in[i];
  for (int off = warpSize / 2; off > 0; off >>= 1) {
    int t = __shfl_down_sync(mask, s, off);
    int u = __shfl_down_sync(mask, m, off);
    if (lane + off < members) {
      s += t;
      m = max(m, u);
    }
  }
  sum[i] = __shfl_sync(mask, s, 0);
  max_out[i] = __shfl_sync(mask, m, 0);
  last[i] = __shfl_sync(mask, in[i], members - 1);
}
