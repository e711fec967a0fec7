// A 16-key bitonic sorting network, fully unrolled (10 compare-exchange steps with a
// barrier after each): straight-line code of ~60 machine blocks, more than the seed's
// 32-block ROM. One CTA of 16 threads sorts 16 keys per tile, CTA by CTA.
__global__ void sort_network16(int *keys) {
  __shared__ int s[16];
  int i = threadIdx.x;
  int base = blockIdx.x * 16;
  s[i] = keys[base + i];
  __syncthreads();
#pragma unroll
  for (int k = 2; k <= 16; k <<= 1) {
#pragma unroll
    for (int d = k >> 1; d > 0; d >>= 1) {
      int j = i ^ d;
      if (j > i) {
        int a = s[i], b = s[j];
        bool up = (i & k) == 0;
        if ((a > b) == up) { s[i] = b; s[j] = a; }
      }
      __syncthreads();
    }
  }
  keys[base + i] = s[i];
}
