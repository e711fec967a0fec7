// Dot product: per-thread products into shared memory, a tree reduction with barriers
// per CTA, and one atomicAdd per CTA into out[0]. blockDim.x must be a power of two.
__global__ void dot_shared(const int* a, const int* b, int* out, int n) {
  __shared__ int part[16];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  part[t] = i < n ? a[i] * b[i] : 0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s) part[t] += part[t + s];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, part[0]);
}
