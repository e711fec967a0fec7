// A file as people keep them: helpers, several kernels, one of them (scale_float) in
// floating point (bit-exact float32 on the interpreter), one with an assert, one that
// prints a string chosen at run time (refused: printf prints string literals only).
#include <cuda_runtime.h>
#include <stdint.h>
#include <assert.h>
#include <stdio.h>

namespace ops {
__device__ __forceinline__ int clampi(int x, int lo, int hi) { return min(max(x, lo), hi); }
__global__ void apply(int *x, int lo, int hi) { x[threadIdx.x] = clampi(x[threadIdx.x], lo, hi); }
}  // namespace ops

namespace alt {
__global__ void apply(int *x, int lo, int hi) { x[threadIdx.x] = lo + hi - x[threadIdx.x]; }
}

__global__ void scale_float(float *x, float s) { x[threadIdx.x] *= s; }

__global__ void checked(uint32_t *x, int n) {
  assert(n > 0);
  x[threadIdx.x] += n;
}

__global__ void named(int *x) {
  const char *names[2] = {"even", "odd"};
  printf("%d is %s\n", x[threadIdx.x], names[x[threadIdx.x] & 1]);
}

__global__ void sum_to_n(int *out, int n) {
  int s = 0;
  for (int i = 0; i < n; i++) s += i;
  out[threadIdx.x] = s;
}

int main() {
  int *d; cudaMalloc(&d, 16);
  ops::apply<<<1, 4>>>(d, 0, 10);
  return 0;
}
