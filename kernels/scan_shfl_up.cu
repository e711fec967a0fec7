// Inclusive prefix sum of a whole CTA: shfl_up scan inside each group of 4 lanes
// (width 4), group totals through shared memory, then each group adds the totals of the
// groups before it.
__global__ void scan_shfl_up(const int* in, int* out) {
  __shared__ int group_total[4];
  int t = threadIdx.x;
  int lane = t & 3;
  int i = blockIdx.x * blockDim.x + t;
  int v = in[i];
  for (int d = 1; d < 4; d <<= 1) {
    int up = __shfl_up_sync(0xffffffff, v, d, 4);
    if (lane >= d) v += up;
  }
  if (lane == 3) group_total[t >> 2] = v;
  __syncthreads();
  for (int g = 0; g < (t >> 2); ++g) v += group_total[g];
  out[i] = v;
}
