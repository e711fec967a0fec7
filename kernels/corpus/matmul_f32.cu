// Tiled float matrix multiply C = A * B (A is M x K, B is K x N, row-major), the CUDA
// tutorial's shared-memory version with 4x4 tiles: a 2-D grid of 4x4 thread blocks, each
// thread one element of C; each step stages one tile of A and one of B in __shared__
// arrays, synchronises, and accumulates sum += As[ty][k] * Bs[k][tx] (clang contracts it
// into fma.rn.f32, as nvcc does: each step rounds once).
#include "cuda_runtime.h"
#include <stdio.h>

#define TILE 4

__global__ void matMulTiled(const float *A, const float *B, float *C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty;
  int col = blockIdx.x * TILE + tx;
  float sum = 0.0f;
  for (int t = 0; t < K / TILE; ++t) {
    As[ty][tx] = A[row * K + t * TILE + tx];
    Bs[ty][tx] = B[(t * TILE + ty) * N + col];
    __syncthreads();
    for (int k = 0; k < TILE; ++k)
      sum += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = sum;
}

int main() {
  const int M = 4, N = 4, K = 8;
  float hA[M * K], hB[K * N], hC[M * N];
  for (int i = 0; i < M * K; i++) hA[i] = 0.5f * i - 3.0f;
  for (int i = 0; i < K * N; i++) hB[i] = 1.0f / (i + 1);
  float *dA, *dB, *dC;
  cudaMalloc(&dA, sizeof(hA));
  cudaMalloc(&dB, sizeof(hB));
  cudaMalloc(&dC, sizeof(hC));
  cudaMemcpy(dA, hA, sizeof(hA), cudaMemcpyHostToDevice);
  cudaMemcpy(dB, hB, sizeof(hB), cudaMemcpyHostToDevice);
  dim3 block(TILE, TILE), grid(N / TILE, M / TILE);
  matMulTiled<<<grid, block>>>(dA, dB, dC, M, N, K);
  cudaMemcpy(hC, dC, sizeof(hC), cudaMemcpyDeviceToHost);
  printf("C[0] = %f\n", hC[0]);
  cudaFree(dA); cudaFree(dB); cudaFree(dC);
  return 0;
}
