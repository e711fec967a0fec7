// Cooperative groups as the programming guide's reduce examples use them: a thread
// block partitioned into tiles of 4 (the machine's warp), cg::reduce with cg::plus and
// cg::greater from cooperative_groups/reduce.h, a helper that takes any thread_group,
// and clock() around the work (qgpu's clock() is 0: the elapsed count it stores is 0).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cstdio>
#include <vector>

namespace cg = cooperative_groups;

__device__ int groupRank(cg::thread_group g) { return g.thread_rank(); }

__global__ void tileSumMax(const int *in, int *sums, int *maxima, int *elapsed, int n) {
  clock_t start = clock();
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<4> tile = cg::tiled_partition<4>(block);
  unsigned i = blockIdx.x * block.size() + block.thread_rank();
  int v = i < n ? in[i] : 0;
  int sum = cg::reduce(tile, v, cg::plus<int>());
  int biggest = cg::reduce(tile, v, cg::greater<int>());
  tile.sync();
  cg::thread_group g = tile;
  if (groupRank(g) == 0) {
    unsigned t = i / tile.size();
    sums[t] = sum;
    maxima[t] = biggest;
  }
  cg::sync(block);
  if (i < n) elapsed[i] = (int)(clock() - start);
}

int main() {
  const int n = 16, tiles = n / 4;
  std::vector<int> h(n);
  for (int i = 0; i < n; i++) h[i] = (i * 37) % 11 - 5;
  int *d_in, *d_sums, *d_max, *d_elapsed;
  cudaMalloc(&d_in, n * sizeof(int));
  cudaMalloc(&d_sums, tiles * sizeof(int));
  cudaMalloc(&d_max, tiles * sizeof(int));
  cudaMalloc(&d_elapsed, n * sizeof(int));
  cudaMemcpy(d_in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  tileSumMax<<<2, 8>>>(d_in, d_sums, d_max, d_elapsed, n);
  std::vector<int> sums(tiles), maxima(tiles);
  cudaMemcpy(sums.data(), d_sums, tiles * sizeof(int), cudaMemcpyDeviceToHost);
  cudaMemcpy(maxima.data(), d_max, tiles * sizeof(int), cudaMemcpyDeviceToHost);
  for (int t = 0; t < tiles; t++) printf("tile %d: sum %d, max %d\n", t, sums[t], maxima[t]);
  return 0;
}
