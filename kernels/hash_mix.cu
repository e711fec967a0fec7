// Integer hashing with unsigned multiplies that wrap: a murmur3-style finaliser and an
// FNV-1a hash of the four bytes of each word.
__global__ void hash_mix(const unsigned* in, unsigned* fmix, unsigned* fnv) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned h = in[i];
  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
  fmix[i] = h;
  unsigned f = 2166136261u;
  for (int b = 0; b < 4; ++b) {
    f ^= (in[i] >> (8 * b)) & 0xFFu;
    f *= 16777619u;
  }
  fnv[i] = f;
}
