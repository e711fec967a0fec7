// Float sum reduction in shared memory, the tutorial tree: each CTA halves its active
// threads each step (s[t] += s[t + stride]), thread 0 writes the CTA's sum.
__global__ void reduce_f32_shared(const float *in, float *sums) {
  __shared__ float s[16];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = s[0];
}
