/* time.h (qgpu): the declarations host code uses, for parsing only. */
#ifndef QGPU_TIME_H
#define QGPU_TIME_H
typedef long time_t;
typedef long clock_t;
#define CLOCKS_PER_SEC 1000000l
extern "C" {
time_t time(time_t *t);
clock_t clock(void);
}
#endif
