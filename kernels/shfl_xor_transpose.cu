// A 4x4 transpose in registers with xor shuffles: lane j of a group holds row j; after
// the exchange lane j holds column j. Each lane keeps 4 values in registers.
__global__ void shfl_xor_transpose(const int* in, int* out) {
  int g = (blockIdx.x * blockDim.x + threadIdx.x) >> 2;
  int lane = threadIdx.x & 3;
  const int* row = in + 16 * g + 4 * lane;
  int result = 0;
  for (int c = 0; c < 4; ++c) {
    // element (lane, c) goes to lane c; lane reads element (src, lane) from lane src
    int src = c;
    int mine = row[lane ^ src];  // value this lane offers to lane (lane ^ src)
    int got = __shfl_xor_sync(0xffffffff, mine, src, 4);
    if (c == 0) result = got;
    else result = result * 100 + got;
  }
  out[4 * g + lane] = result;
}
