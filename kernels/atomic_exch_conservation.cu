// atomicExch chains: every thread swaps its value into one slot and adds the value it got
// back to a total; slot + total is the same whatever the order (a conservation law), and
// is the only thing written out.
__global__ void atomic_exch_conservation(const int* in, int* slot, int* total, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int old = atomicExch(slot, in[i]);
  atomicAdd(total, old);
  __syncthreads();
  if (i == 0) out[0] = atomicExch(slot, 0) + atomicExch(total, 0);
}
