// One level of breadth-first search over a CSR graph with bool masks, as the textbook
// (Rodinia-style) kernel writes it: a frontier node clears its flag and marks every
// unvisited neighbour for the next frontier with its cost. The masks are bool arrays
// (byte stores; the host packs them 4 to a word).
__global__ void bfs_bool(const int *row, const int *col, unsigned *frontier_w,
                         unsigned *next_w, const unsigned *visited_w, int *cost, int n) {
  bool *frontier = (bool *)frontier_w, *next = (bool *)next_w;
  const bool *visited = (const bool *)visited_w;
  int v = blockIdx.x * blockDim.x + threadIdx.x;
  if (v < n && frontier[v]) {
    frontier[v] = false;
    for (int e = row[v]; e < row[v + 1]; e++) {
      int u = col[e];
      if (!visited[u]) {
        cost[u] = cost[v] + 1;
        next[u] = true;
      }
    }
  }
}
