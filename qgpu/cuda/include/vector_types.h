/* vector_types.h (qgpu): CUDA's small vector types, dim3 and their make_ functions, with
 * the alignments CUDA gives them (int2 8 bytes, int4 16, char4 4), for host and device. */
#ifndef QGPU_VECTOR_TYPES_H
#define QGPU_VECTOR_TYPES_H

#define __QGPU_VEC2(T, N, A) \
  struct __attribute__((aligned(A))) N##2 { T x, y; }; typedef struct N##2 N##2; \
  static __host__ __device__ __inline__ N##2 make_##N##2(T x, T y) { N##2 v; v.x = x; v.y = y; return v; }
#define __QGPU_VEC3(T, N) \
  struct N##3 { T x, y, z; }; typedef struct N##3 N##3; \
  static __host__ __device__ __inline__ N##3 make_##N##3(T x, T y, T z) { \
    N##3 v; v.x = x; v.y = y; v.z = z; return v; }
#define __QGPU_VEC4(T, N, A) \
  struct __attribute__((aligned(A))) N##4 { T x, y, z, w; }; typedef struct N##4 N##4; \
  static __host__ __device__ __inline__ N##4 make_##N##4(T x, T y, T z, T w) { \
    N##4 v; v.x = x; v.y = y; v.z = z; v.w = w; return v; }
#define __QGPU_VECS(T, N, A2, A4) __QGPU_VEC2(T, N, A2) __QGPU_VEC3(T, N) __QGPU_VEC4(T, N, A4)

__QGPU_VECS(signed char, char, 2, 4)
__QGPU_VECS(unsigned char, uchar, 2, 4)
__QGPU_VECS(short, short, 4, 8)
__QGPU_VECS(unsigned short, ushort, 4, 8)
__QGPU_VECS(int, int, 8, 16)
__QGPU_VECS(unsigned int, uint, 8, 16)
__QGPU_VECS(float, float, 8, 16)

struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return uint3{x, y, z}; }
};
typedef struct dim3 dim3;

/* the conversions clang's __clang_cuda_builtin_vars.h declares (dim3 b = blockDim;) */
__device__ inline __cuda_builtin_threadIdx_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_threadIdx_t::operator uint3() const { return uint3{x, y, z}; }
__device__ inline __cuda_builtin_blockIdx_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_blockIdx_t::operator uint3() const { return uint3{x, y, z}; }
__device__ inline __cuda_builtin_blockDim_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_blockDim_t::operator uint3() const { return uint3{x, y, z}; }
__device__ inline __cuda_builtin_gridDim_t::operator dim3() const { return dim3(x, y, z); }
__device__ inline __cuda_builtin_gridDim_t::operator uint3() const { return uint3{x, y, z}; }

#endif
