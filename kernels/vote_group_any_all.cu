// any/all per group of 4 lanes derived from a group-masked ballot, so any block size
// means the same on every warp size; and a leader election: the lowest lane of the group
// whose predicate holds writes the group's count.
__global__ void vote_group_any_all(const int* in, int* flags, int* leader_count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % warpSize;
  unsigned group = (__ballot_sync(0xffffffff, in[i] >= 10) >> (lane & ~3u)) & 0xFu;
  unsigned full = (1u << min(4u, blockDim.x - (threadIdx.x & ~3u))) - 1;
  flags[i] = (group != 0) | (group == full) << 1;
  int me = lane & 3;
  if (group && me == 31 - __clz(group & -group)) leader_count[i >> 2] = __popc(group);
}
