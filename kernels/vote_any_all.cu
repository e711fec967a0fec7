// __any_sync and __all_sync over a whole warp. Launches keep blockDim.x <= 4, so one CTA
// is one warp on qgpu and on a 32-lane GPU alike and the votes mean the same; several
// CTAs give several warps.
__global__ void vote_any_all(const int* in, int* any_pos, int* all_pos, int* any_zero,
                             unsigned* ballot) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  any_pos[i] = __any_sync(0xffffffff, v > 0);
  all_pos[i] = __all_sync(0xffffffff, v > 0);
  any_zero[i] = __any_sync(0xffffffff, v == 0) ? 10 : 20;
  ballot[i] = __ballot_sync(0xffffffff, v & 1);
}
