// printf debugging as people do it: a kernel that prints what each thread sees, a guard
// that prints only from thread 0, an assert on an invariant, and host code that checks
// the launch and synchronises (which is when a GPU prints the device's output).
#include <cuda_runtime.h>
#include <cstdio>
#include <cassert>

#define CUDA_CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
  return 1; } } while (0)

// a running sum per block, printed step by step
__global__ void prefixDebug(const int *in, int *out, int n) {
  __shared__ int s[8];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0;
  __syncthreads();
  if (t == 0) {
    int acc = 0;
    for (int k = 0; k < blockDim.x; k++) {
      acc += s[k];
      s[k] = acc;
    }
    printf("block %d: total %d\n", blockIdx.x, acc);
  }
  __syncthreads();
  if (i < n) {
    out[i] = s[t];
    printf("[%d,%d] in=%3d out=%-4d|0x%04x\n", blockIdx.x, t, in[i], out[i], out[i]);
  }
}

// a scale that must stay in range: an assert stops the kernel naming the line
__global__ void scaleChecked(int *x, int factor, int limit) {
  int i = threadIdx.x;
  int v = x[i] * factor;
  assert(v <= limit);
  x[i] = v;
}

// floats print as C prints the double they are promoted to
__global__ void average(const int *x, int n) {
  int s = 0;
  for (int k = 0; k < n; k++) s += x[k];
  if (threadIdx.x == 0) printf("mean %.3f of %d values (%s)\n", (float)s / n, n, "int");
}

int main() {
  int h[8] = {3, 1, 4, 1, 5, 9, 2, 6}, *d_in, *d_out;
  CUDA_CHECK(cudaMalloc(&d_in, sizeof h));
  CUDA_CHECK(cudaMalloc(&d_out, sizeof h));
  CUDA_CHECK(cudaMemcpy(d_in, h, sizeof h, cudaMemcpyHostToDevice));
  prefixDebug<<<2, 4>>>(d_in, d_out, 8);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());
  scaleChecked<<<1, 8>>>(d_in, 3, 20);
  CUDA_CHECK(cudaDeviceSynchronize());
  average<<<1, 4>>>(d_in, 8);
  CUDA_CHECK(cudaDeviceSynchronize());
  return 0;
}
