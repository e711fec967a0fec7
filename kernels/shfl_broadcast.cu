// __shfl_sync (idx) with width 4: every lane reads lane `src` of its own group of 4, and
// lane (lane + 1) & 3 (a rotation); the source lane index may exceed the width, only its
// low bits count.
__global__ void shfl_broadcast(const int* in, const int* src, int* bcast, int* rot,
                               int* wide) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int lane = threadIdx.x & 3;
  bcast[i] = __shfl_sync(0xffffffff, v, src[0], 4);
  rot[i] = __shfl_sync(0xffffffff, v, (lane + 1) & 3, 4);
  wide[i] = __shfl_sync(0xffffffff, v, lane + 6, 4);
}
