/* cooperative_groups.h (qgpu): the thread-block subset of CUDA's cooperative groups,
 * on the launch's own ids: this_thread_block(); thread_group, which a thread block or a
 * tile converts to (sync(), thread_rank(), size()/num_threads(), cg::sync(g)); a block's
 * sync(), thread_rank(),
 * size()/num_threads(), group_index(), thread_index(), dim_threads(); tiles of a block,
 * tiled_partition<N>(block) / thread_block_tile<N> for N = 1, 2, 4, 8, 16, 32 (a tile
 * never straddles CUDA's 32-lane warp): sync(), thread_rank(), size()/num_threads(),
 * meta_group_rank(), meta_group_size(), shfl/shfl_up/shfl_down/shfl_xor of 4-byte values
 * (width N), ballot/any/all; tiles of 8 or more go through qgpu's 32-lane warp operations
 * (qgpu/cuda/warp.py), smaller ones stay in the machine's 4-lane warp. Other sizes are a
 * compile error naming the line that asks for one; grid groups, coalesced groups and
 * tiled_partition(parent, n) with a run-time size are not provided (an error naming the
 * line). cooperative_groups/reduce.h adds cg::reduce over a tile with cg::plus, less,
 * greater, bit_and, bit_or, bit_xor. */
#ifndef QGPU_COOPERATIVE_GROUPS_H
#define QGPU_COOPERATIVE_GROUPS_H
#include "cuda_runtime.h"

namespace cooperative_groups {
/* a thread block (tile_ 0) or a tile of tile_ threads, its kind known at run time as in
 * CUDA (a function taking `thread_group g` serves both) */
class thread_group {
 protected:
  unsigned tile_;
  __device__ static unsigned block_rank() {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  __device__ static unsigned block_size() { return blockDim.x * blockDim.y * blockDim.z; }

 public:
  __device__ explicit thread_group(unsigned tile) : tile_(tile) {}
  __device__ void sync() const {
    if (tile_ == 0) {
      __syncthreads();
    } else {
      __syncwarp((tile_ >= 32u ? ~0u : (1u << tile_) - 1u)
                 << (block_rank() % warpSize / tile_ * tile_));
    }
  }
  __device__ unsigned thread_rank() const { return tile_ ? block_rank() % tile_ : block_rank(); }
  __device__ unsigned size() const { return tile_ ? tile_ : block_size(); }
  __device__ unsigned num_threads() const { return size(); }
};
__device__ inline void sync(const thread_group &g) { g.sync(); }

class thread_block : public thread_group {
 public:
  __device__ thread_block() : thread_group(0) {}
  __device__ void sync() const { __syncthreads(); }
  __device__ unsigned thread_rank() const {
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  }
  __device__ unsigned size() const { return blockDim.x * blockDim.y * blockDim.z; }
  __device__ unsigned num_threads() const { return size(); }
  __device__ dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
  __device__ dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
  __device__ dim3 dim_threads() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
  __device__ dim3 group_dim() const { return dim_threads(); }
};
__device__ inline thread_block this_thread_block() { return thread_block(); }
__device__ inline void sync(const thread_block &g) { g.sync(); }

template <unsigned N>
class thread_block_tile : public thread_group {
  // other sizes compile (so that one kernel does not stop its siblings) and qgpu refuses
  // the kernel that uses one, naming its line (cuda.signature)
  __device__ static unsigned rank_in_block() { return thread_block().thread_rank(); }
  __device__ static unsigned full() { return N >= 32u ? ~0u : (1u << N) - 1u; }
  __device__ static unsigned lanes() {   // this tile's lanes in the warp's ballot
    return full() << (rank_in_block() % warpSize / N * N);
  }
  template <class T>
  __device__ static int bits(T v) {
    static_assert(sizeof(T) == 4, "qgpu: a tile shuffles 4-byte values (int, unsigned, float)");
    return __builtin_bit_cast(int, v);
  }

 public:
  __device__ thread_block_tile() : thread_group(N) {}
  __device__ void sync() const { __syncwarp(lanes()); }
  __device__ unsigned thread_rank() const { return rank_in_block() % N; }
  __device__ unsigned size() const { return N; }
  __device__ unsigned num_threads() const { return N; }
  __device__ unsigned meta_group_rank() const { return rank_in_block() / N; }
  __device__ unsigned meta_group_size() const { return (thread_block().size() + N - 1) / N; }
  template <class T>
  __device__ T shfl(T v, int src) const {
    return __builtin_bit_cast(T, __shfl_sync(lanes(), bits(v), src, N));
  }
  template <class T>
  __device__ T shfl_up(T v, unsigned d) const {
    return __builtin_bit_cast(T, __shfl_up_sync(lanes(), bits(v), d, N));
  }
  template <class T>
  __device__ T shfl_down(T v, unsigned d) const {
    return __builtin_bit_cast(T, __shfl_down_sync(lanes(), bits(v), d, N));
  }
  template <class T>
  __device__ T shfl_xor(T v, int m) const {
    return __builtin_bit_cast(T, __shfl_xor_sync(lanes(), bits(v), m, N));
  }
  __device__ unsigned ballot(int p) const {
    return (__ballot_sync(lanes(), p) & lanes()) >> (rank_in_block() % warpSize / N * N);
  }
  __device__ int any(int p) const { return ballot(p) != 0; }
  __device__ int all(int p) const { return ballot(p) == full(); }
};

template <unsigned N, class Parent>
__device__ inline thread_block_tile<N> tiled_partition(const Parent &) {
  return thread_block_tile<N>();
}
template <unsigned N>
__device__ inline void sync(const thread_block_tile<N> &g) { g.sync(); }
}  // namespace cooperative_groups

#endif
