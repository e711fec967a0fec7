// Float vector add, c = a + b, one element per thread (float bit patterns in unsigned
// words until the launch API takes float parameters).
__global__ void vec_add_f32(const unsigned *a_bits, const unsigned *b_bits, unsigned *c_bits,
                            int n) {
  const float *a = (const float *)a_bits, *b = (const float *)b_bits;
  float *c = (float *)c_bits;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
