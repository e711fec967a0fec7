// Unsigned min/max and their signed counterparts on the same bit patterns.
__global__ void minmax_unsigned(const unsigned* a, const unsigned* b, unsigned* umin,
                                unsigned* umax, int* smin, int* smax) {
  int i = threadIdx.x;
  umin[i] = min(a[i], b[i]);
  umax[i] = max(a[i], b[i]);
  smin[i] = min((int)a[i], (int)b[i]);
  smax[i] = max((int)a[i], (int)b[i]);
}
