/* driver_types.h (qgpu): everything is in cuda_runtime.h. */
#include "cuda_runtime.h"
