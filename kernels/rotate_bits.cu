// Rotations by run-time amounts 1..31 (the idiom compilers turn into funnel shifts) and
// by constants, plus a byte swap.
__global__ void rotate_bits(const unsigned* in, const int* amount, unsigned* rotl,
                            unsigned* rotr, unsigned* rot8, unsigned* bswap) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i];
  int k = amount[i];
  rotl[i] = (x << k) | (x >> (32 - k));
  rotr[i] = (x >> k) | (x << (32 - k));
  rot8[i] = (x << 8) | (x >> 24);
  bswap[i] = (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
}
