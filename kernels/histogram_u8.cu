// Histogram of an 8-bit image (the host packs the unsigned char pixels 4 to a word), 16
// bins by the high nibble: shared-memory bins (atomicAdd), merged into the global
// histogram once per CTA; a grid-stride loop over the pixels.
__global__ void histogram_u8(const unsigned *image, int *hist, int n) {
  const unsigned char *px = (const unsigned char *)image;
  __shared__ int bins[16];
  int t = threadIdx.x;
  for (int b = t; b < 16; b += blockDim.x) bins[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + t; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&bins[px[i] >> 4], 1);
  __syncthreads();
  for (int b = t; b < 16; b += blockDim.x) atomicAdd(&hist[b], bins[b]);
}
