// Trial division primality test: a loop whose trip count depends on the data, with an
// early exit from the loop.
__global__ void is_prime(const int* in, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = in[i];
  int prime = x >= 2;
  for (int d = 2; d * d <= x; ++d) {
    if (x % d == 0) {
      prime = 0;
      break;
    }
  }
  out[i] = prime;
}
