// Unsigned addition and subtraction with 32-bit wrap-around.
__global__ void vec_add_wrap_u32(const unsigned* a, const unsigned* b, unsigned* sum,
                                 unsigned* diff) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  sum[i] = a[i] + b[i];
  diff[i] = a[i] - b[i];
}
