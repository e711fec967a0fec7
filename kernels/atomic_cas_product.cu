// An atomic multiply built from an atomicCAS retry loop (the classic pattern for atomics
// the hardware lacks); the product is the same in any order.
__global__ void atomic_cas_product(const int* in, int* prod) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int old = atomicOr(prod, 0), assumed;   // an atomic read: no plain load races the CAS
  do {
    assumed = old;
    old = atomicCAS(prod, assumed, (int)((unsigned)assumed * (unsigned)v));
  } while (old != assumed);
}
