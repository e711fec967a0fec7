// A small per-thread array indexed only by constants after full unrolling: a 4-tap
// moving window kept in registers, and an insertion sort of 4 values in registers.
__global__ void local_array_unrolled(const int* in, int* window_sum, int* sorted, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    int j = t + k;
    v[k] = j < n ? in[j] : 0;
  }
  window_sum[t] = v[0] + v[1] + v[2] + v[3];
#pragma unroll
  for (int i = 1; i < 4; ++i) {
#pragma unroll
    for (int j = i; j > 0; --j) {
      int lo = min(v[j - 1], v[j]), hi = max(v[j - 1], v[j]);
      v[j - 1] = lo;
      v[j] = hi;
    }
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) sorted[4 * t + k] = v[k];
}
