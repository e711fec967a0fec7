// Transpose of a rows x cols matrix through shared memory; one thread per element.
__global__ void transpose(const int* in, int* out, int rows, int cols) {
  __shared__ int tile[16];
  int t = threadIdx.x;
  if (t < rows * cols) tile[t] = in[t];
  __syncthreads();
  if (t < rows * cols) {
    int r = t / rows, c = t % rows;      // out is cols x rows: out[r][c] = in[c][r]
    out[t] = tile[c * cols + r];
  }
}
