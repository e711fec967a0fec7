// Collatz: the number of steps to reach 1 (data-dependent loop with divergence).
__global__ void collatz_steps(const unsigned* start, int* steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = start[i];
  int n = 0;
  while (x != 1) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    ++n;
  }
  steps[i] = n;
}
