// Matrix transpose through a shared tile (the coalescing example): out = in^T for a
// rows x cols matrix, 2-D blocks, the tile padded by one column against bank conflicts.
#include <cuda_runtime.h>
#include <cstdio>

#define TILE_DIM 4

__global__ void transposeShared(int *out, const int *in, int rows, int cols) {
  __shared__ int tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  if (x < cols && y < rows) tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  if (x < rows && y < cols) out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void transposeNaive(int *out, const int *in, int rows, int cols) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) out[x * rows + y] = in[y * cols + x];
}

int main() {
  const int rows = 4, cols = 4;
  int h_in[rows * cols], h_out[rows * cols];
  for (int i = 0; i < rows * cols; i++) h_in[i] = i;
  int *d_in, *d_out;
  cudaMalloc(&d_in, sizeof(h_in));
  cudaMalloc(&d_out, sizeof(h_out));
  cudaMemcpy(d_in, h_in, sizeof(h_in), cudaMemcpyHostToDevice);
  dim3 threads(TILE_DIM, TILE_DIM);
  dim3 blocks((cols + TILE_DIM - 1) / TILE_DIM, (rows + TILE_DIM - 1) / TILE_DIM);
  transposeShared<<<blocks, threads>>>(d_out, d_in, rows, cols);
  transposeNaive<<<blocks, threads>>>(d_out, d_in, rows, cols);
  cudaMemcpy(h_out, d_out, sizeof(h_out), cudaMemcpyDeviceToHost);
  printf("%d\n", h_out[1]);
  return 0;
}
