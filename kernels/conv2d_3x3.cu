// 2-D convolution of a rows x cols image with a 3x3 kernel (zero padding): nested loops
// with bounds tests, one thread per output pixel.
__global__ void conv2d_3x3(const int* img, const int* w, int* out, int rows, int cols) {
  int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= rows * cols) return;
  int r = p / cols, c = p - r * cols;
  int acc = 0;
  for (int dr = -1; dr <= 1; ++dr) {
    for (int dc = -1; dc <= 1; ++dc) {
      int y = r + dr, x = c + dc;
      if (y < 0 || y >= rows || x < 0 || x >= cols) continue;
      acc += img[y * cols + x] * w[(dr + 1) * 3 + dc + 1];
    }
  }
  out[p] = acc;
}
