// Arithmetic vs logical right shifts and left shifts by run-time amounts 0..31.
__global__ void shifts_signed_unsigned(const int* a, const int* amount, int* sar,
                                       unsigned* shr, int* shl) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i];
  int k = amount[i];
  sar[i] = x >> k;
  shr[i] = (unsigned)x >> k;
  shl[i] = (int)((unsigned)x << k);
}
