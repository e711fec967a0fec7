/* stdint.h (qgpu): the fixed-width integer types of a 64-bit CUDA target. int64_t and
 * uint64_t are long long: 64 bits, as on a GPU (qgpu refuses 64-bit arithmetic rather
 * than narrow it). intptr_t/uintptr_t are not provided: pointers on a GPU are 64-bit and
 * qgpu compiles them as 32-bit, so code that depends on their width is refused. */
#ifndef QGPU_STDINT_H
#define QGPU_STDINT_H
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define INT8_MIN (-128)
#define INT8_MAX 127
#define UINT8_MAX 255
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define UINT16_MAX 65535
#define INT32_MIN (-2147483647 - 1)
#define INT32_MAX 2147483647
#define UINT32_MAX 4294967295u
#endif
