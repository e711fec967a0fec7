// One level of a frontier BFS on a CSR graph with bool masks, the classic course version:
// each frontier vertex marks its unvisited neighbours and sets their cost.
#include <cuda_runtime.h>
#include <stdio.h>

__global__ void bfsLevel(const int *rowPtr, const int *colIdx, bool *frontier,
                         bool *updating, bool *visited, int *cost, int numNodes) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < numNodes && frontier[tid]) {
    frontier[tid] = false;
    for (int e = rowPtr[tid]; e < rowPtr[tid + 1]; e++) {
      int nb = colIdx[e];
      if (!visited[nb]) {
        cost[nb] = cost[tid] + 1;
        updating[nb] = true;
      }
    }
  }
}

// the same level with int flags (what runs today, while byte stores are refused)
__global__ void bfsLevelInt(const int *rowPtr, const int *colIdx, int *frontier,
                            int *updating, const bool *visited, int *cost, int numNodes) {
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  if (tid < numNodes && frontier[tid]) {
    frontier[tid] = 0;
    for (int e = rowPtr[tid]; e < rowPtr[tid + 1]; e++) {
      int nb = colIdx[e];
      if (!visited[nb]) {
        cost[nb] = cost[tid] + 1;
        updating[nb] = 1;
      }
    }
  }
}

int main() {
  printf("see the test for the graph\n");
  return 0;
}
