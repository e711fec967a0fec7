// Unsigned division and remainder by a run-time divisor, including values >= 2^31.
__global__ void divmod_unsigned(const unsigned* a, const unsigned* b, unsigned* q,
                                unsigned* r) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = a[i], y = b[i];
  q[i] = x / y;
  r[i] = x % y;
}
