/* stdio.h (qgpu): the declarations host code uses, for parsing only. printf is also a
 * device function, as in CUDA: the kernel writes records into the printf buffer and the
 * host formats them after the launch (qgpu/cuda/devcalls.py, printf.py). */
#ifndef QGPU_STDIO_H
#define QGPU_STDIO_H
#include <stddef.h>
#include <stdarg.h>
typedef struct _qgpu_FILE FILE;
extern FILE *stdin, *stdout, *stderr;
#define EOF (-1)
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
extern "C" {
__host__ __device__ int printf(const char *fmt, ...);
int fprintf(FILE *f, const char *fmt, ...);
int sprintf(char *s, const char *fmt, ...);
int snprintf(char *s, size_t n, const char *fmt, ...);
int vprintf(const char *fmt, va_list ap);
int vfprintf(FILE *f, const char *fmt, va_list ap);
int scanf(const char *fmt, ...);
int fscanf(FILE *f, const char *fmt, ...);
int sscanf(const char *s, const char *fmt, ...);
int puts(const char *s);
int putchar(int c);
int getchar(void);
int fputs(const char *s, FILE *f);
int fputc(int c, FILE *f);
int fgetc(FILE *f);
char *fgets(char *s, int n, FILE *f);
FILE *fopen(const char *path, const char *mode);
int fclose(FILE *f);
int fflush(FILE *f);
size_t fread(void *p, size_t size, size_t n, FILE *f);
size_t fwrite(const void *p, size_t size, size_t n, FILE *f);
int fseek(FILE *f, long off, int whence);
long ftell(FILE *f);
void perror(const char *s);
}
#endif
