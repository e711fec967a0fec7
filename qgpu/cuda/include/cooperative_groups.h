/* cooperative_groups.h (qgpu): the thread-block subset of CUDA's cooperative groups,
 * on the launch's own ids: this_thread_block(), and a block's sync(), thread_rank(),
 * size()/num_threads(), group_index(), thread_index(), dim_threads(). Grid groups,
 * tiled_partition and coalesced groups are not provided (a kernel using them fails to
 * compile naming the line). */
#ifndef QGPU_COOPERATIVE_GROUPS_H
#define QGPU_COOPERATIVE_GROUPS_H
#include "cuda_runtime.h"

namespace cooperative_groups {
class thread_block {
 public:
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
}  // namespace cooperative_groups

#endif
