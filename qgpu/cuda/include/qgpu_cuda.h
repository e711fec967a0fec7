/* qgpu_cuda.h: the CUDA declarations every kernel sees. qgpu's clang driver includes this
 * header by itself (-include), so kernels written for nvcc compile unchanged: it plays the
 * role of cuda_runtime.h for device code on qgpu's 4-lane machine.
 *
 * warpSize is 32, as CUDA's: a CUDA warp is 8 of the machine's 4-lane warps, and the
 * front end lowers shuffles, votes and __syncwarp over all 32 lanes (qgpu/cuda/warp.py);
 * the shuffles pack c = ((32 - width) << 8) | clamp as CUDA's headers do.
 *
 * Differences from NVIDIA's headers, on purpose:
 *  - atomicInc/atomicDec are CAS loops (the machine has no native inc/dec atomics).
 *  - clock() and clock64() are 0 on the machine and on the interpreter alike: the
 *    machine has no cycle counter (its special registers are tid, ntid, ctaid, nctaid,
 *    laneid and warpid), and a count that differed between the engines would make one
 *    kernel's output depend on where it ran. A kernel that times itself
 *    (`t = clock() - start`) stores 0.
 *
 * As nvcc's cuda_runtime.h does, it brings in the C library's stdio.h, stdlib.h,
 * string.h, time.h, assert.h and math.h (the system's, for host code), so that a file
 * calling exit, rand, memset, clock or ceil without an include compiles as with nvcc.
 */
#ifndef QGPU_CUDA_H
#define QGPU_CUDA_H

#define __QGPU__ 1   /* device code compiled by qgpu (for #ifndef __QGPU__ guards) */

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))

#include <__clang_cuda_builtin_vars.h>

/* nvcc's implicit host includes. math.h: the C library's own (the driver passes its
 * path), not the C++ library's wrapper, which would pull in all of <cmath>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <assert.h>
#ifdef __QGPU_C_MATH_H
#include __QGPU_C_MATH_H
#else
#include <math.h>
#endif

#undef warpSize
#define warpSize 32

#define __QGPU_FN static __device__ __forceinline__

typedef int int32_t;
typedef unsigned int uint32_t;

/* --- float32: bit-exact (cuda.float32 maps each to the ISA's binary32 operations) --- */
__QGPU_FN float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
__QGPU_FN float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
__QGPU_FN int __float_as_int(float x) { return __builtin_bit_cast(int, x); }
__QGPU_FN unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
__QGPU_FN float sqrtf(float x) { return __builtin_sqrtf(x); }
__QGPU_FN float fabsf(float x) { return __builtin_fabsf(x); }
__QGPU_FN float fminf(float a, float b) { return __builtin_fminf(a, b); }
__QGPU_FN float fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
__QGPU_FN float fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
__QGPU_FN float floorf(float x) { return __builtin_floorf(x); }
__QGPU_FN float ceilf(float x) { return __builtin_ceilf(x); }
__QGPU_FN float truncf(float x) { return __builtin_truncf(x); }
__QGPU_FN float rintf(float x) { return __builtin_rintf(x); }
__QGPU_FN float copysignf(float a, float b) { return __builtin_copysignf(a, b); }
/* the _rn intrinsics are never contracted into an fma (CUDA's promise): add.rn/mul.rn */
__QGPU_FN float __fadd_rn(float a, float b) { return __nvvm_add_rn_f(a, b); }
__QGPU_FN float __fsub_rn(float a, float b) { return __nvvm_add_rn_f(a, -b); }
__QGPU_FN float __fmul_rn(float a, float b) { return __nvvm_mul_rn_f(a, b); }
__QGPU_FN float __fdiv_rn(float a, float b) { return a / b; }
__QGPU_FN float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }
__QGPU_FN float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
/* float -> int in a rounding mode: PTX's cvt.r{n,z,m,p}i (NaN -> 0, saturating). clang-19
 * rewrites the .rz builtins into C's (int)x, whose out-of-range result is undefined
 * (__nvvm_f2i_rz(1e10f) was folded away, no store): rz is built from rm and rp. */
__QGPU_FN int __float2int_rn(float x) { return __nvvm_f2i_rn(x); }
__QGPU_FN int __float2int_rz(float x) { return x < 0.0f ? __nvvm_f2i_rp(x) : __nvvm_f2i_rm(x); }
__QGPU_FN int __float2int_rd(float x) { return __nvvm_f2i_rm(x); }
__QGPU_FN int __float2int_ru(float x) { return __nvvm_f2i_rp(x); }
__QGPU_FN unsigned __float2uint_rn(float x) { return __nvvm_f2ui_rn(x); }
/* floor = trunc at or above 0; below 0 both saturate to 0 */
__QGPU_FN unsigned __float2uint_rz(float x) { return __nvvm_f2ui_rm(x); }
__QGPU_FN unsigned __float2uint_rd(float x) { return __nvvm_f2ui_rm(x); }
__QGPU_FN unsigned __float2uint_ru(float x) { return __nvvm_f2ui_rp(x); }
__QGPU_FN float __int2float_rn(int x) { return (float)x; }
__QGPU_FN float __uint2float_rn(unsigned x) { return (float)x; }
__QGPU_FN float atomicAdd(float *p, float v) { return __nvvm_atom_add_gen_f(p, v); }

/* --- atomics (generic pointers: clang infers .global or .shared) --- */
__QGPU_FN int atomicAdd(int *p, int v) { return __nvvm_atom_add_gen_i(p, v); }
__QGPU_FN unsigned atomicAdd(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_add_gen_i((int *)p, (int)v);
}
__QGPU_FN int atomicSub(int *p, int v) { return __nvvm_atom_add_gen_i(p, -v); }
__QGPU_FN unsigned atomicSub(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_add_gen_i((int *)p, -(int)v);
}
__QGPU_FN int atomicMin(int *p, int v) { return __nvvm_atom_min_gen_i(p, v); }
__QGPU_FN unsigned atomicMin(unsigned *p, unsigned v) { return __nvvm_atom_min_gen_ui(p, v); }
__QGPU_FN int atomicMax(int *p, int v) { return __nvvm_atom_max_gen_i(p, v); }
__QGPU_FN unsigned atomicMax(unsigned *p, unsigned v) { return __nvvm_atom_max_gen_ui(p, v); }
__QGPU_FN int atomicAnd(int *p, int v) { return __nvvm_atom_and_gen_i(p, v); }
__QGPU_FN unsigned atomicAnd(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_and_gen_i((int *)p, (int)v);
}
__QGPU_FN int atomicOr(int *p, int v) { return __nvvm_atom_or_gen_i(p, v); }
__QGPU_FN unsigned atomicOr(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_or_gen_i((int *)p, (int)v);
}
__QGPU_FN int atomicXor(int *p, int v) { return __nvvm_atom_xor_gen_i(p, v); }
__QGPU_FN unsigned atomicXor(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_xor_gen_i((int *)p, (int)v);
}
__QGPU_FN int atomicExch(int *p, int v) { return __nvvm_atom_xchg_gen_i(p, v); }
__QGPU_FN unsigned atomicExch(unsigned *p, unsigned v) {
  return (unsigned)__nvvm_atom_xchg_gen_i((int *)p, (int)v);
}
__QGPU_FN int atomicCAS(int *p, int cmp, int v) { return __nvvm_atom_cas_gen_i(p, cmp, v); }
__QGPU_FN unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v) {
  return (unsigned)__nvvm_atom_cas_gen_i((int *)p, (int)cmp, (int)v);
}
/* ((old >= v) ? 0 : old + 1) and ((old == 0 || old > v) ? v : old - 1), as CAS loops. */
__QGPU_FN unsigned atomicInc(unsigned *p, unsigned v) {
  unsigned old = *(volatile unsigned *)p, seen;
  do {
    seen = old;
    old = atomicCAS(p, seen, seen >= v ? 0u : seen + 1u);
  } while (old != seen);
  return old;
}
__QGPU_FN unsigned atomicDec(unsigned *p, unsigned v) {
  unsigned old = *(volatile unsigned *)p, seen;
  do {
    seen = old;
    old = atomicCAS(p, seen, (seen == 0u || seen > v) ? v : seen - 1u);
  } while (old != seen);
  return old;
}

/* the _block and _system variants: on one device with one memory they are the plain
 * atomics (CUDA's scopes differ only in which other threads must see the update) */
#define __QGPU_SCOPED2(name)                                                              \
  template <typename T, typename U> __QGPU_FN T name##_block(T *p, U v) { return name(p, v); } \
  template <typename T, typename U> __QGPU_FN T name##_system(T *p, U v) { return name(p, v); }
__QGPU_SCOPED2(atomicAdd)
__QGPU_SCOPED2(atomicSub)
__QGPU_SCOPED2(atomicMin)
__QGPU_SCOPED2(atomicMax)
__QGPU_SCOPED2(atomicAnd)
__QGPU_SCOPED2(atomicOr)
__QGPU_SCOPED2(atomicXor)
__QGPU_SCOPED2(atomicExch)
__QGPU_SCOPED2(atomicInc)
__QGPU_SCOPED2(atomicDec)
template <typename T, typename U, typename V>
__QGPU_FN T atomicCAS_block(T *p, U c, V v) { return atomicCAS(p, c, v); }
template <typename T, typename U, typename V>
__QGPU_FN T atomicCAS_system(T *p, U c, V v) { return atomicCAS(p, c, v); }

/* --- synchronisation --- */
/* __syncthreads is a clang builtin (bar.sync 0). */
__QGPU_FN void __syncwarp(unsigned mask = 0xffffffffu) { __nvvm_bar_warp_sync(mask); }
__QGPU_FN void __threadfence(void) { __nvvm_membar_gl(); }
__QGPU_FN void __threadfence_block(void) { __nvvm_membar_cta(); }

/* --- warp shuffles and votes: c = ((32 - width) << 8) | clamp, as CUDA's headers --- */
#define __QGPU_SHFL_C(width, clamp) ((((int)(32 - (width))) << 8) | (clamp))
__QGPU_FN int __shfl_sync(unsigned m, int v, int lane, int width = warpSize) {
  return __nvvm_shfl_sync_idx_i32(m, v, lane, __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_FN unsigned __shfl_sync(unsigned m, unsigned v, int lane, int width = warpSize) {
  return (unsigned)__shfl_sync(m, (int)v, lane, width);
}
__QGPU_FN int __shfl_up_sync(unsigned m, int v, unsigned d, int width = warpSize) {
  return __nvvm_shfl_sync_up_i32(m, v, (int)d, __QGPU_SHFL_C(width, 0));
}
__QGPU_FN unsigned __shfl_up_sync(unsigned m, unsigned v, unsigned d, int width = warpSize) {
  return (unsigned)__shfl_up_sync(m, (int)v, d, width);
}
__QGPU_FN int __shfl_down_sync(unsigned m, int v, unsigned d, int width = warpSize) {
  return __nvvm_shfl_sync_down_i32(m, v, (int)d, __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_FN unsigned __shfl_down_sync(unsigned m, unsigned v, unsigned d, int width = warpSize) {
  return (unsigned)__shfl_down_sync(m, (int)v, d, width);
}
__QGPU_FN int __shfl_xor_sync(unsigned m, int v, int lm, int width = warpSize) {
  return __nvvm_shfl_sync_bfly_i32(m, v, lm, __QGPU_SHFL_C(width, 0x1f));
}
__QGPU_FN unsigned __shfl_xor_sync(unsigned m, unsigned v, int lm, int width = warpSize) {
  return (unsigned)__shfl_xor_sync(m, (int)v, lm, width);
}
/* float and 64-bit shuffles, as CUDA's headers define them: a float's bits; a 64-bit
 * value's two words shuffled alike */
#define __QGPU_SHFL_MORE(NAME, L)                                                         \
  __QGPU_FN float NAME(unsigned m, float v, L d, int width = warpSize) {                  \
    return __int_as_float(NAME(m, __float_as_int(v), d, width));                          \
  }                                                                                       \
  __QGPU_FN long long NAME(unsigned m, long long v, L d, int width = warpSize) {          \
    unsigned lo = NAME(m, (unsigned)v, d, width);                                         \
    unsigned hi = NAME(m, (unsigned)((unsigned long long)v >> 32), d, width);             \
    return (long long)(((unsigned long long)hi << 32) | lo);                              \
  }                                                                                       \
  __QGPU_FN unsigned long long NAME(unsigned m, unsigned long long v, L d,                \
                                    int width = warpSize) {                               \
    return (unsigned long long)NAME(m, (long long)v, d, width);                           \
  }                                                                                       \
  __QGPU_FN long NAME(unsigned m, long v, L d, int width = warpSize) {                    \
    return (long)NAME(m, (int)v, d, width);                                               \
  }                                                                                       \
  __QGPU_FN unsigned long NAME(unsigned m, unsigned long v, L d, int width = warpSize) {  \
    return (unsigned long)NAME(m, (unsigned)v, d, width);                                 \
  }
__QGPU_SHFL_MORE(__shfl_sync, int)
__QGPU_SHFL_MORE(__shfl_up_sync, unsigned)
__QGPU_SHFL_MORE(__shfl_down_sync, unsigned)
__QGPU_SHFL_MORE(__shfl_xor_sync, int)
__QGPU_FN unsigned __ballot_sync(unsigned m, int p) { return __nvvm_vote_ballot_sync(m, p); }
__QGPU_FN int __any_sync(unsigned m, int p) { return __nvvm_vote_any_sync(m, p); }
__QGPU_FN int __all_sync(unsigned m, int p) { return __nvvm_vote_all_sync(m, p); }
__QGPU_FN unsigned __activemask(void) { return __nvvm_vote_ballot(1); }
/* match: 32-bit values natively; 64-bit ones as both words matching */
__QGPU_FN unsigned __match_any_sync(unsigned m, int v) { return __nvvm_match_any_sync_i32(m, v); }
__QGPU_FN unsigned __match_any_sync(unsigned m, unsigned v) {
  return __match_any_sync(m, (int)v);
}
__QGPU_FN unsigned __match_any_sync(unsigned m, float v) {
  return __match_any_sync(m, __float_as_int(v));
}
__QGPU_FN unsigned __match_any_sync(unsigned m, long long v) {
  return __match_any_sync(m, (int)v) & __match_any_sync(m, (int)((unsigned long long)v >> 32));
}
__QGPU_FN unsigned __match_any_sync(unsigned m, unsigned long long v) {
  return __match_any_sync(m, (long long)v);
}
__QGPU_FN unsigned __match_all_sync(unsigned m, int v, int *pred) {
  return __nvvm_match_all_sync_i32p(m, v, pred);
}
__QGPU_FN unsigned __match_all_sync(unsigned m, unsigned v, int *pred) {
  return __match_all_sync(m, (int)v, pred);
}
__QGPU_FN unsigned __match_all_sync(unsigned m, float v, int *pred) {
  return __match_all_sync(m, __float_as_int(v), pred);
}
__QGPU_FN unsigned __match_all_sync(unsigned m, long long v, int *pred) {
  int lo, hi;
  unsigned a = __match_all_sync(m, (int)v, &lo);
  __match_all_sync(m, (int)((unsigned long long)v >> 32), &hi);
  *pred = lo && hi;
  return *pred ? a : 0u;
}
__QGPU_FN unsigned __match_all_sync(unsigned m, unsigned long long v, int *pred) {
  return __match_all_sync(m, (long long)v, pred);
}

/* --- integer intrinsics --- */
__QGPU_FN int __popc(unsigned x) { return __builtin_popcount(x); }
__QGPU_FN int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
__QGPU_FN unsigned __brev(unsigned x) { return __builtin_bitreverse32(x); }
__QGPU_FN int __ffs(int x) { return __builtin_ffs(x); }
__QGPU_FN int __mulhi(int a, int b) { return __nvvm_mulhi_i(a, b); }
__QGPU_FN unsigned __umulhi(unsigned a, unsigned b) { return __nvvm_mulhi_ui(a, b); }
/* __mul24/__sad without signed overflow (undefined in C++): through unsigned, as the
 * hardware's mul24.lo.s32 and sad.s32 compute them. */
__QGPU_FN int __mul24(int a, int b) {
  return (int)((unsigned)((int)((unsigned)a << 8) >> 8) * (unsigned)((int)((unsigned)b << 8) >> 8));
}
__QGPU_FN unsigned __umul24(unsigned a, unsigned b) { return (a & 0xffffffu) * (b & 0xffffffu); }
__QGPU_FN int __sad(int a, int b, unsigned c) {
  return (int)((a > b ? (unsigned)a - (unsigned)b : (unsigned)b - (unsigned)a) + c);
}
__QGPU_FN unsigned __usad(unsigned a, unsigned b, unsigned c) {
  return (a > b ? a - b : b - a) + c;
}
template <typename T> __QGPU_FN T __ldg(const T *p) { return *p; }

__QGPU_FN int min(int a, int b) { return a < b ? a : b; }
__QGPU_FN unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
__QGPU_FN unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
__QGPU_FN unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
__QGPU_FN int max(int a, int b) { return a > b ? a : b; }
__QGPU_FN unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
__QGPU_FN unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
__QGPU_FN unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
__QGPU_FN unsigned umin(unsigned a, unsigned b) { return a < b ? a : b; }
__QGPU_FN unsigned umax(unsigned a, unsigned b) { return a > b ? a : b; }
__QGPU_FN int abs(int a) { return a < 0 ? -a : a; }

/* device printf (clang turns it into vprintf; the host's printf is the C library's) */
extern "C" __device__ int printf(const char *, ...);

/* assert in device code: the C library's assert macro calls __assert_fail, here CUDA's
 * __assertfail, a macro so that the call keeps the user's line (its line table names the
 * file as the user gave it) and __func__ names the function: the failing lane traps
 * (qgpu/cuda/devcalls.py) and the launch ends with a KernelAssertion naming file:line,
 * thread and condition; NDEBUG removes asserts. assert.h re-included later redefines only
 * the assert macro. */
extern "C" __host__ __device__ void __assertfail(const char *cond, const char *file,
                                                 unsigned line, const char *func,
                                                 size_t char_size);
#define __assert_fail(cond, file, line, func) \
  __assertfail(cond, file, line, __func__, sizeof(char))

/* clock(), clock64(): 0 (see the top of this file) */
__QGPU_FN clock_t clock(void) { return 0; }
__QGPU_FN long long clock64(void) { return 0; }

/* nvcc includes cuda_runtime.h by itself: so does qgpu (dim3, int2, ...) */
#include "cuda_runtime.h"

#endif /* QGPU_CUDA_H */
