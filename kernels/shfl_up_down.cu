// shfl_up and shfl_down with width 4 and deltas 1..3: a lane whose source would leave
// its group of 4 keeps its own value.
__global__ void shfl_up_down(const int* in, int* up, int* down) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int u = 0, d = 0;
  for (unsigned delta = 1; delta < 4; ++delta) {
    u = u * 7 + __shfl_up_sync(0xffffffff, v, delta, 4);
    d = d * 7 + __shfl_down_sync(0xffffffff, v, delta, 4);
  }
  up[i] = u;
  down[i] = d;
}
