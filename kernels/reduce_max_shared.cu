// Block maximum in shared memory (tree with barriers), then atomicMax across CTAs.
__global__ void reduce_max_shared(const int* in, int* out, int n) {
  __shared__ int s[16];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : -2147483647 - 1;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (t < half) s[t] = max(s[t], s[t + half]);
    __syncthreads();
  }
  if (t == 0) atomicMax(out, s[0]);
}
