// Integer square root by binary search over the answer (unsigned, no division).
__global__ void isqrt_loop(const unsigned* in, unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i];
  unsigned lo = 0, hi = 65536;          // invariant: lo*lo <= x < hi*hi
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) >> 1;
    if (mid * mid <= x && mid <= 65535) lo = mid;
    else hi = mid;
  }
  out[i] = lo;
}
