// 2-D convolution of a rows x cols image with a 3x3 kernel (zero padding): one loop over
// the 9 taps (row and column of a tap by division by the constant 3), bounds tests with
// continue, one thread per output pixel. `#pragma unroll 1` keeps the loop a loop: fully
// unrolled, the taps need more than the machine's 15 registers.
__global__ void conv2d_3x3(const int* img, const int* w, int* out, int rows, int cols) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= rows * cols) return;
  int r = p / cols, c = p - r * cols;
  int acc = 0;
#pragma unroll 1
  for (int k = 0; k < 9; ++k) {
    int y = r + k / 3 - 1, x = c + k % 3 - 1;
    if (y < 0 || y >= rows || x < 0 || x >= cols) continue;
    acc += img[y * cols + x] * w[k];
  }
  out[p] = acc;
}
