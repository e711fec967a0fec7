// Division and remainder by constants, which compilers turn into multiply-high and shift
// sequences: signed /3, %7, /-5, /16, %8 and unsigned /10, %10, /7.
__global__ void div_by_constants(const int* a, int* s, unsigned* u) {
  int i = threadIdx.x;
  int x = a[i];
  unsigned ux = (unsigned)x;
  s[5 * i + 0] = x / 3;
  s[5 * i + 1] = x % 7;
  s[5 * i + 2] = x / -5;
  s[5 * i + 3] = x / 16;
  s[5 * i + 4] = x % 8;
  u[3 * i + 0] = ux / 10;
  u[3 * i + 1] = ux % 10;
  u[3 * i + 2] = ux / 7;
}
