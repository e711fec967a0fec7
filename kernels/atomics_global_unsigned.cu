// The unsigned atomics on global memory (min/max compare as unsigned) and the values they
// return, folded into order-independent totals: the sum of all old values of atomicAdd
// equals n*(n-1)/2 * step when every thread adds the same step.
__global__ void atomics_global_unsigned(const unsigned* in, unsigned* acc, unsigned step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = in[i];
  atomicMin(&acc[0], v);
  atomicMax(&acc[1], v);
  atomicAnd(&acc[2], v);
  atomicOr(&acc[3], v);
  atomicXor(&acc[4], v);
  atomicSub(&acc[5], v);
  unsigned old = atomicAdd(&acc[6], step);
  atomicAdd(&acc[7], old);
}
