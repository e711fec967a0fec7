// Float dot product with atomicAdd on a float: every thread adds x[i] * y[i] (rounded to
// float) into *out. The machine's atomics run warp by warp and lane by lane, so the sum's
// order is fixed (a GPU's is not). Float bit patterns in unsigned words.
__global__ void dot_f32(const unsigned *x_bits, const unsigned *y_bits, unsigned *out, int n) {
  const float *x = (const float *)x_bits, *y = (const float *)y_bits;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd((float *)out, x[i] * y[i]);
}
