// y = M x + bias for an n x n matrix: one thread per row, a loop over columns.
__global__ void matvec(const int* M, const int* x, const int* bias, int* y, int n) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) {
    int acc = bias[r];
    for (int c = 0; c < n; ++c) acc += M[r * n + c] * x[c];
    y[r] = acc;
  }
}
