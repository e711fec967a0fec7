// |a - b| with a ternary, and the sign of the comparison as -1/0/1.
__global__ void absdiff_select(const int* a, const int* b, int* d, int* cmp) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i], y = b[i];
  d[i] = x > y ? x - y : y - x;
  cmp[i] = (x > y) - (x < y);
}
