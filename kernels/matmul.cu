// C = A * B for n x n matrices (row-major), one thread per element of C.
__global__ void matmul(const int* A, const int* B, int* C, int n) {
  int idx = blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= n * n) return;
  int row = idx / n, col = idx % n;
  int acc = 0;
  for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
  C[idx] = acc;
}
