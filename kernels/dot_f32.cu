// Float dot product with atomicAdd on a float: every thread adds x[i] * y[i] (rounded to
// float) into *out. The machine's atomics run warp by warp and lane by lane, so the sum's
// order is fixed (a GPU's is not).
__global__ void dot_f32(const float *x, const float *y, float *out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, x[i] * y[i]);
}
