// SAXPY on floats: y = a * x + y, one fused multiply-add per element (clang contracts
// a * x[i] + y[i] into fma.rn.f32, as nvcc does). The arrays and a are float bit
// patterns in unsigned words until the launch API takes float parameters.
__global__ void saxpy_f32(unsigned *y_bits, const unsigned *x_bits, unsigned a_bits, int n) {
  float *y = (float *)y_bits;
  const float *x = (const float *)x_bits;
  float a = __uint_as_float(a_bits);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
