/* helper_functions.h (qgpu): see helper_cuda.h. */
#include "helper_cuda.h"
