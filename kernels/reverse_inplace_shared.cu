// Reverse each CTA's segment in place: load to shared memory, barrier, write back.
__global__ void reverse_inplace_shared(int* data) {
  __shared__ int s[16];
  int t = threadIdx.x;
  int base = blockIdx.x * blockDim.x;
  s[t] = data[base + t];
  __syncthreads();
  data[base + t] = s[blockDim.x - 1 - t];
}
