// y = a*x + y over integers, written the way a first tutorial writes its host code with
// nvcc: only cuda_runtime.h is included, yet rand, srand, memset, malloc, exit, clock and
// ceil are used (nvcc's headers declare them), and the launch is spelled
// `<< <blocks, threads>> >`, as an old clang-format left it.
#include <cuda_runtime.h>

__global__ void saxpyInt(int n, int a, const int *x, int *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

int main() {
  const int n = 10, a = 3;
  int *x = (int *)malloc(n * sizeof(int)), *y = (int *)malloc(n * sizeof(int));
  if (!x || !y) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  srand(42);
  memset(y, 0, n * sizeof(int));
  for (int i = 0; i < n; i++) x[i] = rand() % 100;
  int *dx, *dy;
  cudaMalloc(&dx, n * sizeof(int));
  cudaMalloc(&dy, n * sizeof(int));
  cudaMemcpy(dx, x, n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y, n * sizeof(int), cudaMemcpyHostToDevice);
  int threads = 4;
  int blocks = (int)ceil((double)n / threads);
  clock_t start = clock();
  saxpyInt<< <blocks, threads>> >(n, a, dx, dy);
  cudaDeviceSynchronize();
  double ms = 1000.0 * (clock() - start) / CLOCKS_PER_SEC;
  cudaMemcpy(y, dy, n * sizeof(int), cudaMemcpyDeviceToHost);
  for (int i = 0; i < n; i++) {
    if (y[i] != a * x[i]) {
      printf("mismatch at %d\n", i);
      exit(EXIT_FAILURE);
    }
  }
  printf("ok in %.3f ms\n", ms);
  cudaFree(dx);
  cudaFree(dy);
  free(x);
  free(y);
  return 0;
}
