// 8-bin histogram of (value & 7) with atomicAdd straight into global memory.
__global__ void histogram_global(const int* in, int* hist, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(&hist[in[i] & 7], 1);
}
