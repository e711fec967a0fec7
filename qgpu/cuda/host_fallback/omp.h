/* omp.h (qgpu fallback, searched after the system's headers: an installed OpenMP's omp.h
 * wins): the OpenMP runtime calls host code makes, declared for parsing. qgpu never runs
 * host code, and `#pragma omp` lines are ignored without -fopenmp. */
#ifndef QGPU_FALLBACK_OMP_H
#define QGPU_FALLBACK_OMP_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct { void *_lk; } omp_lock_t;
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_get_max_threads(void);
int omp_get_num_procs(void);
void omp_set_num_threads(int n);
int omp_in_parallel(void);
double omp_get_wtime(void);
double omp_get_wtick(void);
void omp_init_lock(omp_lock_t *l);
void omp_destroy_lock(omp_lock_t *l);
void omp_set_lock(omp_lock_t *l);
void omp_unset_lock(omp_lock_t *l);
#ifdef __cplusplus
}
#endif
#endif
