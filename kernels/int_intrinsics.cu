// CUDA's integer intrinsics beyond popc/clz/brev: __mulhi, __umulhi, __ffs, __sad, __usad,
// __mul24, __umul24 (24-bit multiplies of the sign- or zero-extended low 24 bits).
__global__ void int_intrinsics(const int* a, const int* b, int* s, unsigned* u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i], y = b[i];
  s[4 * i + 0] = __mulhi(x, y);
  s[4 * i + 1] = __ffs(x);
  s[4 * i + 2] = __sad(x, y, 7u);
  s[4 * i + 3] = __mul24(x, y);
  u[3 * i + 0] = __umulhi((unsigned)x, (unsigned)y);
  u[3 * i + 1] = __usad((unsigned)x, (unsigned)y, 1u);
  u[3 * i + 2] = __umul24((unsigned)x, (unsigned)y);
}
