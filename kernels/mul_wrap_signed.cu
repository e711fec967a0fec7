// Signed products that overflow, computed through unsigned (defined wrap-around in C),
// then read back as int: low 32 bits, and the product's sign and magnitude tests.
__global__ void mul_wrap_signed(const int* a, const int* b, int* prod, int* neg) {
  int i = threadIdx.x;
  int p = (int)((unsigned)a[i] * (unsigned)b[i]);
  prod[i] = p;
  neg[i] = p < 0 ? -1 : (p == 0 ? 0 : 1);
}
