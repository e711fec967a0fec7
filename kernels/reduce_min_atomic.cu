// Global minimum and the unsigned maximum of the same words, straight atomics.
__global__ void reduce_min_atomic(const int* in, int* smin, unsigned* umax) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  atomicMin(smin, in[i]);
  atomicMax(umax, (unsigned)in[i]);
}
