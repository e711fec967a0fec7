// Distinct values by atomicCAS on shared flags: the first thread to claim a bin (CAS
// 0 -> 1 succeeds) counts it, so count = number of distinct bins, in any order. Also an
// atomicExch on shared memory that marks every bin seen.
__global__ void distinct_count_cas(const int* in, int* count, int* seen) {
  __shared__ int claimed[16];
  __shared__ int marks[16];
  int t = threadIdx.x;
  claimed[t] = 0;
  marks[t] = 0;
  __syncthreads();
  int bin = in[blockIdx.x * blockDim.x + t] & 15;
  if (bin < blockDim.x) {
    if (atomicCAS(&claimed[bin], 0, 1) == 0) atomicAdd(&count[blockIdx.x], 1);
    atomicExch(&marks[bin], 1);
  }
  __syncthreads();
  seen[blockIdx.x * blockDim.x + t] = marks[t];
}
