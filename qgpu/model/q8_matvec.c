/* q8_matvec.c: y = x W^T for an 8-bit matrix W in blocks of 32 columns (int8 values and one
   float32 scale per block, as GGUF's Q8_0), float32 inputs x [T, cols]. Not the bf16
   base's bits (the option `--text-weights q8` says so): the compiler may vectorize the
   sums in any order (-O3 -march=native); threads split the rows. */
#include <pthread.h>
#include <stdint.h>

#define BLOCK 32
#define MAX_THREADS 16

typedef struct {
    const int8_t *q; const float *s; const float *x; float *y;
    int64_t r0, r1, rows, cols, t;
} job;

static void *run(void *arg) {
    const job *j = arg;
    int64_t blocks = j->cols / BLOCK;
    for (int64_t r = j->r0; r < j->r1; r++) {
        const int8_t *row = j->q + r * j->cols;
        const float *scale = j->s + r * blocks;
        for (int64_t t = 0; t < j->t; t++) {
            const float *x = j->x + t * j->cols;
            float acc[BLOCK] = {0};   /* per-lane sums: elementwise, so it vectorizes */
            for (int64_t b = 0; b < blocks; b++)
                for (int c = 0; c < BLOCK; c++)
                    acc[c] += scale[b] * ((float)row[b * BLOCK + c] * x[b * BLOCK + c]);
            float total = 0.0f;
            for (int c = 0; c < BLOCK; c++) total += acc[c];
            j->y[t * j->rows + r] = total;
        }
    }
    return NULL;
}

void qgpu_q8_matmul(const int8_t *q, const float *s, int64_t rows, int64_t cols,
                    const float *x, int64_t t, float *y, int threads) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 1 || rows * cols * t < (1 << 18)) threads = 1;
    job jobs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    for (int k = 0; k < threads; k++)
        jobs[k] = (job){q, s, x, y, rows * k / threads, rows * (k + 1) / threads, rows, cols, t};
    for (int k = 1; k < threads; k++) pthread_create(&ids[k], NULL, run, &jobs[k]);
    run(&jobs[0]);
    for (int k = 1; k < threads; k++) pthread_join(ids[k], NULL);
}
