// The six comparisons of the same bit patterns as int and as unsigned, packed as bits.
__global__ void compare_signed_unsigned(const int* a, const int* b, int* bits) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i], y = b[i];
  unsigned ux = x, uy = y;
  int r = (x < y) | (x <= y) << 1 | (x > y) << 2 | (x >= y) << 3 | (x == y) << 4 |
          (x != y) << 5;
  r |= (ux < uy) << 6 | (ux <= uy) << 7 | (ux > uy) << 8 | (ux >= uy) << 9;
  bits[i] = r;
}
