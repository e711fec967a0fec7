// A shared-memory tree reduction as tutorials write it: a 256-int shared array, one
// element per thread, halving strides with __syncthreads(); out[blockIdx.x] = the sum.
#define BLOCK 256
__global__ void reduce_tree_256(const int *in, int *out, int n) {
  __shared__ int sdata[BLOCK];
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? in[i] : 0;
  __syncthreads();
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = sdata[0];
}
