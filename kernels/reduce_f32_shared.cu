// Float sum reduction in shared memory, the tutorial tree: each CTA halves its active
// threads each step (s[t] += s[t + stride]), thread 0 writes the CTA's sum. Float bit
// patterns in unsigned words.
__global__ void reduce_f32_shared(const unsigned *in_bits, unsigned *sums) {
  const float *in = (const float *)in_bits;
  __shared__ float s[16];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (t < stride) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) ((float *)sums)[blockIdx.x] = s[0];
}
