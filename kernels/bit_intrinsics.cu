// __popc, __clz, __brev and the find-first-set built from them.
__global__ void bit_intrinsics(const unsigned* in, int* popc, int* clz, unsigned* brev,
                               int* ffs) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i];
  popc[i] = __popc(x);
  clz[i] = __clz(x);
  brev[i] = __brev(x);
  ffs[i] = x ? 32 - __clz(x & -x) : 0;     // 1-based index of the lowest set bit
}
