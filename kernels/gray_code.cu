// Gray code and its inverse (a loop of xor-shifts), and the parity by folding.
__global__ void gray_code(const unsigned* in, unsigned* gray, unsigned* back,
                          unsigned* parity) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = in[i];
  unsigned g = x ^ (x >> 1);
  gray[i] = g;
  unsigned b = g;
  for (unsigned s = 1; s < 32; s <<= 1) b ^= b >> s;
  back[i] = b;
  unsigned p = x;
  p ^= p >> 16; p ^= p >> 8; p ^= p >> 4; p ^= p >> 2; p ^= p >> 1;
  parity[i] = p & 1;
}
