// Odd-even transposition sort of n <= 16 elements in shared memory: n rounds, each
// followed by a barrier; thread t compares the pair starting at t when its parity matches.
__global__ void odd_even_sort(int* data, int n) {
  __shared__ int s[16];
  int t = threadIdx.x;
  if (t < n) s[t] = data[t];
  __syncthreads();
  for (int round = 0; round < n; ++round) {
    if ((t & 1) == (round & 1) && t + 1 < n) {
      int a = s[t], b = s[t + 1];
      if (a > b) {
        s[t] = b;
        s[t + 1] = a;
      }
    }
    __syncthreads();
  }
  if (t < n) data[t] = s[t];
}
