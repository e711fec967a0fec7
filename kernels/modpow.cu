// Modular exponentiation base^exp mod m by square-and-multiply (loop over exponent bits,
// unsigned % by a run-time modulus 2 <= m < 2^16 so products fit in 32 bits; base < m).
__global__ void modpow(const unsigned* base, const unsigned* exp, unsigned m,
                       unsigned* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned b = base[i], e = exp[i], r = 1;
  while (e) {
    if (e & 1) r = r * b % m;
    b = b * b % m;
    e >>= 1;
  }
  out[i] = r;
}
