// Block sum in shared memory with a tree of barriers; out[blockIdx.x] = the CTA's sum.
// Works for any blockDim.x <= 16 (the tree starts at the next power of two).
__global__ void reduce_sum_shared(const int* in, int* out) {
  __shared__ int s[16];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  int width = 1;
  while (width < blockDim.x) width <<= 1;
  for (int half = width >> 1; half > 0; half >>= 1) {
    if (t < half && t + half < blockDim.x) s[t] += s[t + half];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}
