// Greatest common divisor by Euclid's algorithm (loop with unsigned %), and the lcm.
__global__ void gcd_euclid(const unsigned* a, const unsigned* b, unsigned* g,
                           unsigned* l) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = a[i], y = b[i];
  while (y != 0) {
    unsigned r = x % y;
    x = y;
    y = r;
  }
  g[i] = x;
  l[i] = x ? a[i] / x * b[i] : 0;
}
