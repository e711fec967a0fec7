// Every atomic kind on shared memory (per CTA), then thread 0 writes the CTA's words out.
__global__ void atomics_shared(const int* in, int* out) {
  __shared__ int s[8];
  int t = threadIdx.x;
  if (t == 0) {
    s[0] = 0; s[1] = 1000; s[2] = 2147483647; s[3] = -2147483647 - 1;
    s[4] = -1; s[5] = 0; s[6] = 0; s[7] = 0;
  }
  __syncthreads();
  int v = in[blockIdx.x * blockDim.x + t];
  atomicAdd(&s[0], v);
  atomicSub(&s[1], v);
  atomicMin(&s[2], v);
  atomicMax(&s[3], v);
  atomicAnd(&s[4], v);
  atomicOr(&s[5], v);
  atomicXor(&s[6], v);
  atomicMax((unsigned*)&s[7], (unsigned)v);
  __syncthreads();
  if (t < 8) out[blockIdx.x * 8 + t] = s[t];
}
