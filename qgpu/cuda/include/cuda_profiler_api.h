/* cuda_profiler_api.h (qgpu): the profiler's start/stop calls host code makes around a
 * region (declared for parsing; qgpu does not run host code). */
#ifndef QGPU_CUDA_PROFILER_API_H
#define QGPU_CUDA_PROFILER_API_H
#include "cuda_runtime.h"
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
cudaError_t cudaProfilerInitialize(const char *config, const char *out, int mode);
#endif
