// Histogram into shared memory per CTA (atomicAdd on shared words), then merged into the
// global histogram with one atomicAdd per bin per CTA.
__global__ void histogram_shared(const unsigned* in, int* hist, int nbins) {
  __shared__ int local[8];
  int t = threadIdx.x;
  if (t < nbins) local[t] = 0;
  __syncthreads();
  unsigned v = in[blockIdx.x * blockDim.x + t];
  atomicAdd(&local[v % nbins], 1);
  __syncthreads();
  if (t < nbins) atomicAdd(&hist[t], local[t]);
}
