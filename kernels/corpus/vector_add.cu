// Vector addition, as the first chapter of every CUDA tutorial writes it: a kernel, a
// checking macro, and host code that allocates, copies, launches and prints.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
  do {                                                                       \
    cudaError_t err_ = (call);                                               \
    if (err_ != cudaSuccess) {                                               \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      exit(EXIT_FAILURE);                                                    \
    }                                                                        \
  } while (0)

__global__ void vectorAdd(const int *A, const int *B, int *C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < numElements) {
    C[i] = A[i] + B[i];
  }
}

int main(void) {
  int numElements = 12;
  size_t size = numElements * sizeof(int);
  int *h_A = (int *)malloc(size), *h_B = (int *)malloc(size), *h_C = (int *)malloc(size);
  for (int i = 0; i < numElements; ++i) { h_A[i] = rand() % 100; h_B[i] = rand() % 100; }
  int *d_A = NULL, *d_B = NULL, *d_C = NULL;
  CHECK(cudaMalloc((void **)&d_A, size));
  CHECK(cudaMalloc((void **)&d_B, size));
  CHECK(cudaMalloc((void **)&d_C, size));
  CHECK(cudaMemcpy(d_A, h_A, size, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_B, h_B, size, cudaMemcpyHostToDevice));
  int threadsPerBlock = 4;
  int blocksPerGrid = (numElements + threadsPerBlock - 1) / threadsPerBlock;
  vectorAdd<<<blocksPerGrid, threadsPerBlock>>>(d_A, d_B, d_C, numElements);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h_C, d_C, size, cudaMemcpyDeviceToHost));
  for (int i = 0; i < numElements; ++i) {
    if (h_A[i] + h_B[i] != h_C[i]) { printf("mismatch at %d\n", i); return 1; }
  }
  printf("Test PASSED\n");
  cudaFree(d_A); cudaFree(d_B); cudaFree(d_C);
  free(h_A); free(h_B); free(h_C);
  return 0;
}
