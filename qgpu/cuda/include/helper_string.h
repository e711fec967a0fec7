/* helper_string.h (qgpu): the CUDA samples' command-line helpers, declared for parsing
 * (qgpu does not run host code). A helper_string.h beside the source, or on an -I path,
 * is used instead. */
#ifndef QGPU_HELPER_STRING_H
#define QGPU_HELPER_STRING_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
bool checkCmdLineFlag(const int argc, const char **argv, const char *flag);
int getCmdLineArgumentInt(const int argc, const char **argv, const char *flag);
float getCmdLineArgumentFloat(const int argc, const char **argv, const char *flag);
bool getCmdLineArgumentString(const int argc, const char **argv, const char *flag,
                              char **value);
int stringRemoveDelimiter(char delimiter, const char *s);
char *sdkFindFilePath(const char *file, const char *executable);
#endif
