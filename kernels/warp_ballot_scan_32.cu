// CUDA's 32-lane warp scan and ballot compaction, written for warpSize 32: an inclusive
// prefix sum with __shfl_up_sync at offsets 1..16, then the positive inputs packed to the
// front of the warp's slots by their rank in __ballot_sync's mask (no atomics), the rest
// of the slots 0; __syncwarp orders the 0 fill before the packed writes. info[i] holds
// the warp's kept count, __any_sync(v < -500) << 8 and __all_sync(v > -900) << 9. The
// mask names the warp's existing members (a CTA of fewer than 32 threads is one partial
// warp).
__global__ void warp_ballot_scan_32(const int* in, int* scan, int* packed, unsigned* info) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % warpSize;
  unsigned first = threadIdx.x - lane;
  unsigned members = blockDim.x - first < warpSize ? blockDim.x - first : warpSize;
  unsigned mask = members == 32 ? 0xffffffffu : (1u << members) - 1u;
  int v = in[i], s = v;
  for (int off = 1; off < warpSize; off <<= 1) {
    int t = __shfl_up_sync(mask, s, off);
    if (lane >= off) s += t;
  }
  scan[i] = s;
  int keep = v > 0;
  unsigned kept = __ballot_sync(mask, keep);
  packed[i] = 0;
  __syncwarp(mask);
  if (keep) packed[i - lane + __popc(kept & ((1u << lane) - 1u))] = v;
  info[i] = __popc(kept) | (unsigned)__any_sync(mask, v < -500) << 8
            | (unsigned)__all_sync(mask, v > -900) << 9;
}
