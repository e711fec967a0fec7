// Nested divergent branches: the path depends on the lane's parity and its data's sign,
// and the paths reconverge before a common tail.
__global__ void divergent_if_else(const int* in, int* out) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[t];
  int r;
  if (t & 1) {
    if (v < 0) r = -v * 3;
    else r = v + 100;
  } else {
    if (v > 10) r = v - 10;
    else if (v > 0) r = v * v;
    else r = 7;
  }
  out[t] = r + t;
}
