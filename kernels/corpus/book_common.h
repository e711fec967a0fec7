// book_common.h: the error handling of a CUDA book's common header, as such headers
// write it: HANDLE_ERROR prints the error and leaves with EXIT_FAILURE, with no
// #include <stdlib.h> of its own (nvcc's headers bring it in).
#ifndef BOOK_COMMON_H
#define BOOK_COMMON_H
#include <stdio.h>

static void HandleError(cudaError_t err, const char *file, int line) {
  if (err != cudaSuccess) {
    printf("%s in %s at line %d\n", cudaGetErrorString(err), file, line);
    exit(EXIT_FAILURE);
  }
}
#define HANDLE_ERROR(err) (HandleError(err, __FILE__, __LINE__))

#define imin(a, b) (a < b ? a : b)
#endif
