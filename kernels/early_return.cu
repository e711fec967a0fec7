// Early return: threads whose input is negative leave at once; threads past n too; the
// others loop a data-dependent number of times. No barrier follows a return.
__global__ void early_return(const int* in, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = in[i];
  if (v < 0) return;
  int acc = 1;
  for (int k = 0; k < v; ++k) {
    acc = acc * 3;
    if (acc > 1000) return;
  }
  out[i] = acc;
}
