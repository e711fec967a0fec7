// Every int atomic on global memory, each on its own word. The final words do not depend
// on the order in which threads arrive (the returned old values would, so none is kept).
__global__ void atomics_global_int(const int* in, int* acc) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  atomicAdd(&acc[0], v);
  atomicSub(&acc[1], v);
  atomicMin(&acc[2], v);
  atomicMax(&acc[3], v);
  atomicAnd(&acc[4], v);
  atomicOr(&acc[5], v);
  atomicXor(&acc[6], v);
}
