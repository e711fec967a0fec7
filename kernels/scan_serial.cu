// Exclusive prefix sum by one thread (a sequential loop), then every thread scales its
// own element by the total: a loop that only thread 0 runs, and a barrier after it.
__global__ void scan_serial(const int* in, int* out, int* total, int n) {
  __shared__ int sum;
  if (threadIdx.x == 0) {
    int acc = 0;
    for (int i = 0; i < n; ++i) {
      out[i] = acc;
      acc += in[i];
    }
    sum = acc;
    total[0] = acc;
  }
  __syncthreads();
  int t = threadIdx.x;
  if (t < n) out[t] = out[t] * 2 - sum;
}
