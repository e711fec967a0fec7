// A 16-bin histogram of an 8-bit image: shared-memory bins per block, merged with global
// atomics (the privatisation pattern of the histogram chapter).
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

#define NUM_BINS 16

__global__ void histogram(const unsigned char *image, unsigned int *bins, int n) {
  __shared__ unsigned int local[NUM_BINS];
  for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    atomicAdd(&local[image[i] >> 4], 1u);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

int main() {
  const int n = 40;
  std::vector<unsigned char> img(n);
  for (int i = 0; i < n; i++) img[i] = (unsigned char)(i * 37);
  unsigned char *d_img; unsigned int *d_bins;
  cudaMalloc(&d_img, n);
  cudaMalloc(&d_bins, NUM_BINS * sizeof(unsigned int));
  cudaMemcpy(d_img, img.data(), n, cudaMemcpyHostToDevice);
  cudaMemset(d_bins, 0, NUM_BINS * sizeof(unsigned int));
  histogram<<<2, 8>>>(d_img, d_bins, n);
  unsigned int h_bins[NUM_BINS];
  cudaMemcpy(h_bins, d_bins, sizeof(h_bins), cudaMemcpyDeviceToHost);
  for (int b = 0; b < NUM_BINS; b++) printf("%2d: %u\n", b, h_bins[b]);
  return 0;
}
