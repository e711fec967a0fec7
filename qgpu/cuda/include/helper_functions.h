/* helper_functions.h (qgpu): the CUDA samples' host helpers (see helper_cuda.h): the
 * command-line helpers of helper_string.h and the timers of helper_timer.h. */
#ifndef QGPU_HELPER_FUNCTIONS_H
#define QGPU_HELPER_FUNCTIONS_H
#include "helper_cuda.h"
#include "helper_string.h"
#include "helper_timer.h"
#endif
