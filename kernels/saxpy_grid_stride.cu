// Grid-stride SAXPY as NVIDIA's blog writes it: y = a * x + y, each thread stepping by
// blockDim.x * gridDim.x, launched saxpy<<<8, 128>>> over 2,048 floats.
__global__ void saxpy(int n, float a, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    y[i] = a * x[i] + y[i];
  }
}
