// y[i] = alpha * x[i] + y[i] (int), the integer form of BLAS saxpy.
__global__ void saxpy_int(int alpha, const int* x, int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + y[i];
}
