/* string.h (qgpu): the declarations host code uses, for parsing only. */
#ifndef QGPU_STRING_H
#define QGPU_STRING_H
#include <stddef.h>
extern "C" {
void *memset(void *p, int v, size_t n);
void *memcpy(void *d, const void *s, size_t n);
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strcpy(char *d, const char *s);
char *strncpy(char *d, const char *s, size_t n);
char *strcat(char *d, const char *s);
char *strchr(const char *s, int c);
char *strstr(const char *s, const char *t);
}
#endif
