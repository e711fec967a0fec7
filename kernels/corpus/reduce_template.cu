// A template sum reduction in shared memory (tree of halving strides), instantiated for
// int and unsigned by the host's launches and one explicit instantiation.
#include <cuda_runtime.h>
#include <iostream>

#define BLOCK 8

template <typename T>
__global__ void reduceSum(const T *in, T *out, int n) {
  __shared__ T sdata[BLOCK];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? in[i] : T(0);
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}

template __global__ void reduceSum<int>(const int *, int *, int);

int main() {
  int *d_in, *d_out;
  unsigned *u_in, *u_out;
  cudaMalloc(&d_in, 16 * sizeof(int)); cudaMalloc(&d_out, 2 * sizeof(int));
  cudaMalloc(&u_in, 16 * sizeof(unsigned)); cudaMalloc(&u_out, 2 * sizeof(unsigned));
  reduceSum<int><<<2, BLOCK>>>(d_in, d_out, 16);
  reduceSum<unsigned><<<2, BLOCK>>>(u_in, u_out, 16);
  cudaDeviceSynchronize();
  std::cout << "done" << std::endl;
  return 0;
}
