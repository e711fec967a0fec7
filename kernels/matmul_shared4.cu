// 4x4 matrix product with both operands staged in shared memory (one CTA, 16 threads),
// row and column from shifts and masks.
__global__ void matmul_shared4(const int* A, const int* B, int* C) {
  __shared__ int sa[16];
  __shared__ int sb[16];
  int t = threadIdx.x;
  sa[t] = A[t];
  sb[t] = B[t];
  __syncthreads();
  int row = t >> 2, col = t & 3;
  int acc = 0;
  for (int k = 0; k < 4; ++k) acc += sa[row * 4 + k] * sb[k * 4 + col];
  C[t] = acc;
}
