// Fibonacci numbers mod 2^32 with uint32_t/int32_t types: fib(k) for a per-thread k up to
// 100 (wraps), and the count-down loop form with an unsigned counter.
__global__ void fib_uint32(const int32_t* k, uint32_t* fib, int32_t* down) {
  int32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t a = 0, b = 1;
  for (int32_t s = 0; s < k[i]; ++s) {
    uint32_t c = a + b;
    a = b;
    b = c;
  }
  fib[i] = a;
  int32_t n = 0;
  for (uint32_t left = (uint32_t)k[i]; left-- > 0;) n += 2;
  down[i] = n;
}
