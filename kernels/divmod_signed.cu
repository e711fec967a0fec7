// Signed division and remainder by a run-time divisor: C truncates toward zero and the
// remainder takes the dividend's sign (negative operands on either side).
__global__ void divmod_signed(const int* a, const int* b, int* q, int* r) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i], y = b[i];
  int d = x / y;
  q[i] = d;
  r[i] = x - d * y;
}
