// A switch on an opcode per element: a tiny interpreter (data-dependent multiway branch).
__global__ void switch_dispatch(const int* op, const int* a, const int* b, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int x = a[i], y = b[i], r;
  switch (op[i]) {
    case 0: r = x + y; break;
    case 1: r = x - y; break;
    case 2: r = x * y; break;
    case 3: r = x & y; break;
    case 4: r = x | y; break;
    case 5: r = x ^ y; break;
    case 6: r = x < y ? x : y; break;
    default: r = -1; break;
  }
  out[i] = r;
}
