// 3-point stencil out[i] = in[i-1] + 2 in[i] + in[i+1] (zero outside 0..n-1), each CTA
// staging its segment plus a halo of one element on each side in shared memory.
__global__ void stencil_1d(const int* in, int* out, int n) {
  __shared__ int s[18];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s[t + 1] = i < n ? in[i] : 0;
  if (t == 0) s[0] = i > 0 && i - 1 < n ? in[i - 1] : 0;
  if (t == blockDim.x - 1) s[t + 2] = i + 1 < n ? in[i + 1] : 0;
  __syncthreads();
  if (i < n) out[i] = s[t] + 2 * s[t + 1] + s[t + 2];
}
