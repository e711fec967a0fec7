// A 1-D convolution with its mask in constant memory, filled by the host with
// cudaMemcpyToSymbol (the constant-memory chapter's example).
#include <cuda_runtime.h>
#include <stdio.h>

#define MASK 3
__constant__ int mask[MASK];

__global__ void convolve(const int *in, int *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int sum = 0;
  for (int j = 0; j < MASK; j++) {
    int k = i + j - MASK / 2;
    if (k >= 0 && k < n) sum += in[k] * mask[j];
  }
  out[i] = sum;
}

int main() {
  int h_mask[MASK] = {1, 2, 1};
  cudaMemcpyToSymbol(mask, h_mask, sizeof(h_mask));
  int *d_in, *d_out;
  cudaMalloc(&d_in, 8 * sizeof(int));
  cudaMalloc(&d_out, 8 * sizeof(int));
  convolve<<<2, 4>>>(d_in, d_out, 8);
  printf("done\n");
  return 0;
}
