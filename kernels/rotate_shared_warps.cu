// Data exchange between warps through shared memory: every thread reads the element of a
// thread in another warp (offset 5), after a barrier; then a second round through a
// second barrier.
__global__ void rotate_shared_warps(const int* in, int* out) {
  __shared__ int s[16];
  int t = threadIdx.x;
  int n = blockDim.x;
  int base = blockIdx.x * n;
  s[t] = in[base + t];
  __syncthreads();
  int v = s[(t + 5) % n];
  __syncthreads();
  s[t] = v * 2 + t;
  __syncthreads();
  out[base + t] = s[n - 1 - t];
}
