// Bitonic sort of one CTA's blockDim.x elements (a power of two: 4, 8 or 16) in shared
// memory, ascending; every compare-exchange step is followed by a barrier.
__global__ void bitonic_sort(int* data) {
  __shared__ int s[16];
  int t = threadIdx.x;
  int n = blockDim.x;
  int base = blockIdx.x * n;
  s[t] = data[base + t];
  __syncthreads();
  for (int k = 2; k <= n; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      int partner = t ^ j;
      if (partner > t) {
        int a = s[t], b = s[partner];
        int ascending = (t & k) == 0;
        if ((a > b) == ascending) {
          s[t] = b;
          s[partner] = a;
        }
      }
      __syncthreads();
    }
  }
  data[base + t] = s[t];
}
