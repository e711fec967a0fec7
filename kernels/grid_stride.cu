// Grid-stride loop: each thread handles elements i, i + stride, i + 2*stride, ...
__global__ void grid_stride(const int* a, int* out, int n) {
  int stride = blockDim.x * gridDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = 3 * a[i] - i;
}
