// Tiled matrix multiply C = A * B of N x N int matrices, a 2-D grid of 2-D blocks, each
// thread one element of C (rows by threadIdx.y, columns by threadIdx.x).
#include "cuda_runtime.h"
#include "device_launch_parameters.h"
#include <stdio.h>
#include "matmul.cuh"

__global__ void matMul(const int *A, const int *B, int *C, uint N) {
  __shared__ int As[TILE][TILE];
  __shared__ int Bs[TILE][TILE];
  uint row = blockIdx.y * TILE + threadIdx.y;
  uint col = blockIdx.x * TILE + threadIdx.x;
  int sum = 0;
  for (uint t = 0; t < N / TILE; ++t) {
    As[threadIdx.y][threadIdx.x] = A[row * N + t * TILE + threadIdx.x];
    Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * N + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k) sum += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  C[row * N + col] = sum;
}

int main() {
  const uint N = 4;
  int h[3][N * N];
  for (uint i = 0; i < N * N; i++) { h[0][i] = i; h[1][i] = i % 3; }
  int *d[3];
  for (int m = 0; m < 3; m++) cudaMalloc(&d[m], sizeof(h[0]));
  cudaMemcpy(d[0], h[0], sizeof(h[0]), cudaMemcpyHostToDevice);
  cudaMemcpy(d[1], h[1], sizeof(h[1]), cudaMemcpyHostToDevice);
  dim3 block(TILE, TILE), grid(N / TILE, N / TILE);
  matMul<<<grid, block>>>(d[0], d[1], d[2], N);
  cudaMemcpy(h[2], d[2], sizeof(h[2]), cudaMemcpyDeviceToHost);
  printf("C[0][0] = %d\n", h[2][0]);
  return 0;
}
