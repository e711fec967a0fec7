// y[i] = alpha * x[i] + y[i] in unsigned arithmetic: products overflow and wrap.
__global__ void saxpy_u32_wrap(unsigned alpha, const unsigned* x, unsigned* y) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = alpha * x[i] + y[i];
}
