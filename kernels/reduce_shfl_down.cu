// Sum with warp shuffles inside groups of 4 lanes (width 4), one atomicAdd per group.
__global__ void reduce_shfl_down(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  v += __shfl_down_sync(0xffffffff, v, 2, 4);
  v += __shfl_down_sync(0xffffffff, v, 1, 4);
  if ((threadIdx.x & 3) == 0) {
    atomicAdd(&out[0], v);
    out[1 + i / 4] = v;
  }
}
