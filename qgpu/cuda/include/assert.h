/* assert.h (qgpu): assert as CUDA defines it in device code, a call of __assertfail when
 * the condition fails: the failing lane traps (qgpu/cuda/devcalls.py) and the launch ends
 * with a KernelAssertion naming file:line, thread and condition; NDEBUG removes asserts,
 * as in C. */
#ifndef QGPU_ASSERT_H
#define QGPU_ASSERT_H
#include <stddef.h>
extern "C" __host__ __device__ void __assertfail(const char *cond, const char *file,
                                                 unsigned line, const char *func,
                                                 size_t char_size);
#endif
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, 1))
#endif
