// Per element: abs, negation, and signed min/max against a scalar bound.
__global__ void abs_neg_minmax(const int* a, int* out, int bound) {
  int i = threadIdx.x;
  int x = a[i];
  out[4 * i + 0] = abs(x);
  out[4 * i + 1] = -x;
  out[4 * i + 2] = min(x, bound);
  out[4 * i + 3] = max(x, bound);
}
