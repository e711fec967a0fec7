/* cooperative_groups/reduce.h (qgpu): cg::reduce(tile, value, op) over a
 * thread_block_tile<N> (N = 1, 2, 4, 8, 16, 32), every thread of the tile receiving
 * the result, as CUDA's; op is cg::plus, less (the minimum), greater (the maximum),
 * bit_and, bit_or, bit_xor, or any callable. The values combine by a butterfly of
 * shfl_xor (for float plus the rounding follows that order: lane pairs at distance N/2
 * first). */
#ifndef QGPU_COOPERATIVE_GROUPS_REDUCE_H
#define QGPU_COOPERATIVE_GROUPS_REDUCE_H
#include "../cooperative_groups.h"

namespace cooperative_groups {
template <class T> struct plus {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <class T> struct less {
  __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};
template <class T> struct greater {
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
template <class T> struct bit_and {
  __device__ T operator()(T a, T b) const { return a & b; }
};
template <class T> struct bit_or {
  __device__ T operator()(T a, T b) const { return a | b; }
};
template <class T> struct bit_xor {
  __device__ T operator()(T a, T b) const { return a ^ b; }
};

template <unsigned N, class T, class Op>
__device__ T reduce(const thread_block_tile<N> &tile, T value, Op op) {
  for (unsigned mask = N / 2; mask > 0; mask /= 2) value = op(value, tile.shfl_xor(value, mask));
  return value;
}
}  // namespace cooperative_groups
#endif
