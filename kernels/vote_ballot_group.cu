// __ballot_sync reduced to the thread's own group of 4 lanes, so the result does not
// depend on the warp size: on qgpu (warpSize 4) the shift is 0; on a 32-lane GPU the
// group's 4 bits sit at (lane & ~3). Each thread gets its group's mask, the count of set
// predicates in it and its rank among them (set lanes below it).
__global__ void vote_ballot_group(const int* in, unsigned* mask, int* count, int* rank) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int p = in[i] > 0;
  unsigned lane = threadIdx.x % warpSize;
  unsigned group = (__ballot_sync(0xffffffff, p) >> (lane & ~3u)) & 0xFu;
  mask[i] = group;
  count[i] = __popc(group);
  rank[i] = __popc(group & ((1u << (lane & 3)) - 1));
}
