// The introductory vector addition as CUDA's samples write it (vectorAdd.cu): one
// thread per element, launched vectorAdd<<<blocksPerGrid, 256>>> over 1,024 floats.
__global__ void vectorAdd(const float *A, const float *B, float *C, int numElements) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < numElements) {
    C[i] = A[i] + B[i] + 0.0f;
  }
}
