// SAXPY as the tutorials write it: y = a * x + y, one element per thread. clang contracts
// a * x[i] + y[i] into one fma.rn.f32 (rounded once), as nvcc does.
__global__ void saxpy_f32(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
