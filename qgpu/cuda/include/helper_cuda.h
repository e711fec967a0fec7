/* helper_cuda.h (qgpu): the macros of the CUDA samples' helper header that host code
 * uses, reduced to what a device-side compile needs (they expand to nothing device code
 * sees). A helper_cuda.h beside the source, or on an -I path, is used instead. */
#ifndef QGPU_HELPER_CUDA_H
#define QGPU_HELPER_CUDA_H
#include "cuda_runtime.h"
#include <stdio.h>
#include <stdlib.h>
#define checkCudaErrors(val) (val)
#define getLastCudaError(msg) ((void)(msg))
#define CUDA_CHECK(val) (val)
#define cudaCheckErrors(msg) ((void)(msg))
#include "helper_string.h"
inline int findCudaDevice(int argc, const char **argv) { return 0; }
inline int findCudaDevice(int argc, char **argv) { return 0; }
inline int gpuDeviceInit(int dev) { return dev; }
int gpuGetMaxGflopsDeviceId(void);
int _ConvertSMVer2Cores(int major, int minor);
const char *_ConvertSMVer2ArchName(int major, int minor);
bool checkCudaCapabilities(int major, int minor);
template <class T> void check(T result, const char *func, const char *file, int line);
#endif
