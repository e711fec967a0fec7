// Counting values above a threshold, with the C++ host code of a tutorial repository:
// std::vector, <algorithm>, <numeric>, std::string, iostream, a thread from <pthread.h>,
// the machine's name from <sys/utsname.h>, OpenMP to fill the input, and the profiler
// API around the launch.
#include <algorithm>
#include <iostream>
#include <numeric>
#include <string>
#include <vector>
#include <omp.h>
#include <pthread.h>
#include <sys/utsname.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

__global__ void countAbove(const int *values, int *count, int threshold, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && values[i] > threshold) atomicAdd(count, 1);
}

static void *report(void *arg) {
  std::cout << *static_cast<std::string *>(arg) << std::endl;
  return nullptr;
}

int main(int argc, char **argv) {
  const int n = 16;
  int threshold = argc > 1 ? std::stoi(argv[1]) : 10;
  std::vector<int> values(n);
#pragma omp parallel for
  for (int i = 0; i < n; i++) values[i] = (i * 7) % 23;
  std::vector<int> sorted(values);
  std::sort(sorted.begin(), sorted.end());
  int expected = (int)(sorted.end() - std::upper_bound(sorted.begin(), sorted.end(), threshold));
  int *d_values, *d_count, count = 0;
  cudaMalloc(&d_values, n * sizeof(int));
  cudaMalloc(&d_count, sizeof(int));
  cudaMemcpy(d_values, values.data(), n * sizeof(int), cudaMemcpyHostToDevice);
  cudaMemcpy(d_count, &count, sizeof(int), cudaMemcpyHostToDevice);
  cudaProfilerStart();
  countAbove<<<(n + 7) / 8, 8>>>(d_values, d_count, threshold, n);
  cudaProfilerStop();
  cudaMemcpy(&count, d_count, sizeof(int), cudaMemcpyDeviceToHost);
  struct utsname host;
  uname(&host);
  std::string line = std::string(host.nodename) + ": " + std::to_string(count) + " of " +
                     std::to_string(n) + " above " + std::to_string(threshold) +
                     (count == expected ? " (ok)" : " (WRONG)") + ", sum " +
                     std::to_string(std::accumulate(values.begin(), values.end(), 0)) +
                     ", " + std::to_string(omp_get_max_threads()) + " host threads";
  pthread_t t;
  pthread_create(&t, nullptr, report, &line);
  pthread_join(t, nullptr);
  return count == expected ? 0 : 1;
}
