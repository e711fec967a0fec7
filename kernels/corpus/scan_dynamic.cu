// An inclusive prefix sum (Hillis-Steele) of one block in dynamic shared memory: the
// size comes from the launch's third <<<...>>> argument, as in the scan chapter.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void scanBlock(const int *in, int *out, int n) {
  extern __shared__ int temp[];
  int tid = threadIdx.x;
  temp[tid] = tid < n ? in[tid] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    int v = tid >= offset ? temp[tid - offset] : 0;
    __syncthreads();
    temp[tid] += v;
    __syncthreads();
  }
  if (tid < n) out[tid] = temp[tid];
}

int main() {
  int *d_in, *d_out;
  cudaMalloc(&d_in, 8 * sizeof(int));
  cudaMalloc(&d_out, 8 * sizeof(int));
  scanBlock<<<1, 8, 8 * sizeof(int)>>>(d_in, d_out, 8);
  cudaDeviceSynchronize();
  printf("done\n");
  return 0;
}
