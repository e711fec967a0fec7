// Stream compaction without atomics: each group of 4 lanes keeps its elements that are
// multiples of 3, packed to the front of the group's 4 output slots in lane order (rank
// from the popcount of the group-masked ballot below the lane); the rest of the slots
// get -1, and count[g] holds how many were kept. Unsigned idx shuffle broadcasts the
// group's count. __syncwarp orders the -1 fill before the packed writes.
__global__ void compact_ballot(const int* in, int* out, unsigned* count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % warpSize;
  int v = in[i];
  int keep = v % 3 == 0;
  unsigned group = (__ballot_sync(0xffffffff, keep) >> (lane & ~3u)) & 0xFu;
  unsigned kept = __popc(group);
  unsigned rank = __popc(group & ((1u << (lane & 3)) - 1));
  int base = i & ~3;
  out[i] = -1;
  __syncwarp(0xFu << (lane & ~3u));   // the own group of 4: every named lane exists
  if (keep) out[base + rank] = v;
  unsigned first = __shfl_sync(0xffffffff, kept * 16u + (lane & 3), 0, 4);
  if ((lane & 3) == 3) count[i >> 2] = first;
}
