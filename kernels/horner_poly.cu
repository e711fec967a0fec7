// p(x) = 3x^3 - 2x^2 + x - 7 by Horner's rule, and q(x) with coefficients from memory.
__global__ void horner_poly(const int* x, const int* coef, int ncoef, int* p, int* q) {
  int i = threadIdx.x;
  int v = x[i];
  p[i] = ((3 * v - 2) * v + 1) * v - 7;
  int acc = 0;
  for (int k = 0; k < ncoef; ++k) acc = acc * v + coef[k];
  q[i] = acc;
}
