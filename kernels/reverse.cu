// Reverse an array of n elements across all CTAs: out[n - 1 - i] = in[i].
__global__ void reverse(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[n - 1 - i] = in[i];
}
