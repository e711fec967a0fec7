// out[i] = clamp(a[i], lo, hi) written with ?:, relu[i] = max(a[i], 0) written with if.
__global__ void clamp_relu(const int* a, int* out, int* relu, int lo, int hi, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i];
  out[i] = x < lo ? lo : (x > hi ? hi : x);
  int r = x;
  if (r < 0) r = 0;
  relu[i] = r;
}
