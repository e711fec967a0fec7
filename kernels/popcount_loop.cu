// Kernighan's bit-count loop (x &= x - 1) compared with __popc, and the parity.
__global__ void popcount_loop(const unsigned* in, int* loop_count, int* popc, int* parity) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i];
  int n = 0;
  while (x) {
    x &= x - 1;
    ++n;
  }
  loop_count[i] = n;
  popc[i] = __popc(in[i]);
  parity[i] = __popc(in[i]) & 1;
}
