// A dot product as a CUDA book teaches it: each block sums its threads' products in a
// shared cache (a tree of halving strides), the host adds the blocks' partial sums.
#include "book_common.h"

const int N = 24;
const int threadsPerBlock = 8;
const int blocksPerGrid = imin(2, (N + threadsPerBlock - 1) / threadsPerBlock);

__global__ void dot(const int *a, const int *b, int *partial) {
  __shared__ int cache[threadsPerBlock];
  int tid = threadIdx.x + blockIdx.x * blockDim.x;
  int cacheIndex = threadIdx.x;
  int temp = 0;
  while (tid < N) {
    temp += a[tid] * b[tid];
    tid += blockDim.x * gridDim.x;
  }
  cache[cacheIndex] = temp;
  __syncthreads();
  int i = blockDim.x / 2;
  while (i != 0) {
    if (cacheIndex < i) cache[cacheIndex] += cache[cacheIndex + i];
    __syncthreads();
    i /= 2;
  }
  if (cacheIndex == 0) partial[blockIdx.x] = cache[0];
}

int main(void) {
  int *a, *b, *partial, *dev_a, *dev_b, *dev_partial;
  a = (int *)malloc(N * sizeof(int));
  b = (int *)malloc(N * sizeof(int));
  partial = (int *)malloc(blocksPerGrid * sizeof(int));
  HANDLE_ERROR(cudaMalloc((void **)&dev_a, N * sizeof(int)));
  HANDLE_ERROR(cudaMalloc((void **)&dev_b, N * sizeof(int)));
  HANDLE_ERROR(cudaMalloc((void **)&dev_partial, blocksPerGrid * sizeof(int)));
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = i * 2;
  }
  HANDLE_ERROR(cudaMemcpy(dev_a, a, N * sizeof(int), cudaMemcpyHostToDevice));
  HANDLE_ERROR(cudaMemcpy(dev_b, b, N * sizeof(int), cudaMemcpyHostToDevice));
  dot<<<blocksPerGrid, threadsPerBlock>>>(dev_a, dev_b, dev_partial);
  HANDLE_ERROR(cudaMemcpy(partial, dev_partial, blocksPerGrid * sizeof(int),
                          cudaMemcpyDeviceToHost));
  int c = 0;
  for (int i = 0; i < blocksPerGrid; i++) c += partial[i];
  printf("Does GPU value %d = %d?\n", c, 2 * (N - 1) * N * (2 * N - 1) / 6);
  HANDLE_ERROR(cudaFree(dev_a));
  HANDLE_ERROR(cudaFree(dev_b));
  HANDLE_ERROR(cudaFree(dev_partial));
  free(a);
  free(b);
  free(partial);
  return 0;
}
