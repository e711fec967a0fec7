// Inclusive prefix sum of one CTA's elements (Hillis-Steele, double-buffered shared
// memory so that no step reads a word another thread writes in the same step).
__global__ void scan_shared(const int* in, int* out) {
  __shared__ int buf[2][16];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  int cur = 0;
  buf[0][t] = in[base + t];
  __syncthreads();
  for (int d = 1; d < blockDim.x; d <<= 1) {
    int v = buf[cur][t];
    if (t >= d) v += buf[cur][t - d];
    buf[cur ^ 1][t] = v;
    cur ^= 1;
    __syncthreads();
  }
  out[base + t] = buf[cur][t];
}
