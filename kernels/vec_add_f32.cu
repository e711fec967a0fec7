// Float vector add, c = a + b, one element per thread.
__global__ void vec_add_f32(const float *a, const float *b, float *c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
