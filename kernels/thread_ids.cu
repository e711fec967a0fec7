// Every special register: each thread writes its global id, threadIdx, blockIdx, blockDim
// and gridDim packed into one word.
__global__ void thread_ids(int* out) {
  int gid = blockIdx.x * blockDim.x + threadIdx.x;
  out[gid] = (gridDim.x << 24) | (blockDim.x << 16) | (blockIdx.x << 8) | threadIdx.x;
}
