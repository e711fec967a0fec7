// Butterfly all-reduce with __shfl_xor_sync (width 4): every lane gets its group's sum,
// xor and maximum.
__global__ void allreduce_shfl_xor(const int* in, int* sum, int* xr, int* mx) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int s = in[i], x = in[i], m = in[i];
  for (int d = 1; d < 4; d <<= 1) {
    s += __shfl_xor_sync(0xffffffff, s, d, 4);
    x ^= __shfl_xor_sync(0xffffffff, x, d, 4);
    m = max(m, __shfl_xor_sync(0xffffffff, m, d, 4));
  }
  sum[i] = s;
  xr[i] = x;
  mx[i] = m;
}
