// Counting: how many elements are positive, zero and negative (atomicAdd on counters).
__global__ void count_positive(const int* in, int* counts, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int v = in[i];
    if (v > 0) atomicAdd(&counts[0], 1);
    else if (v == 0) atomicAdd(&counts[1], 1);
    else atomicAdd(&counts[2], 1);
  }
}
