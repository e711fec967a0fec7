// Argmax with a CAS loop on a packed (value, index) word: value in the high 24 bits,
// index in the low 8; the largest value wins, ties go to the largest index. Plus the
// same result through a single atomicMax on the packed word, for comparison.
__global__ void atomic_cas_max_pair(const unsigned* val, unsigned* best, unsigned* best2) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned mine = (val[i] << 8) | i;
  unsigned old = atomicOr(best, 0u);   // an atomic read: no plain load races the CAS
  while (old < mine) {
    unsigned seen = atomicCAS(best, old, mine);
    if (seen == old) break;
    old = seen;
  }
  atomicMax(best2, mine);
}
