// The project's demo: out[0] += sum of a[i] * b[i] over i < n (one atomicAdd per thread).
__global__ void dot(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, a[i] * b[i]);
}
