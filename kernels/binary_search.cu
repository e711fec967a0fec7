// lower_bound: each thread searches the sorted array for its key (data-dependent loop).
__global__ void binary_search(const int* sorted, int n, const int* keys, int* pos) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int key = keys[i];
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) >> 1;
    if (sorted[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  pos[i] = lo;
}
