/* bf16_matvec.c: y = x W^T for a bfloat16 matrix W (row-major bits, as a safetensors file
   stores them: memory-mapped, never widened as a whole) and float32 inputs x [T, cols].
   Each output is a float32 sum in one fixed order: column c goes to partial c % 32, the
   32 partials are reduced in a fixed tree, so the result is the same bits with AVX-512
   (four rows at a time), AVX2 or
   without, on any number of threads (threads split the rows). Multiplies and adds are
   separate (no fused multiply-add: -ffp-contract=off) for the same reason. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

#define LANES 32
#define MAX_THREADS 16

static inline float bf16(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float reduce(const float *p) {
    float q[8];
    for (int l = 0; l < 8; l++) q[l] = ((p[l] + p[8 + l]) + p[16 + l]) + p[24 + l];
    return ((q[0] + q[4]) + (q[2] + q[6])) + ((q[1] + q[5]) + (q[3] + q[7]));
}

static float dot(const uint16_t *w, const float *x, int cols) {
    float p[LANES];
    int c = 0, body = cols - cols % LANES;
#ifdef __AVX2__
    __m256 a[4];
    for (int k = 0; k < 4; k++) a[k] = _mm256_setzero_ps();
    for (; c < body; c += LANES) {
        for (int k = 0; k < 4; k++) {
            __m128i bits = _mm_loadu_si128((const __m128i *)(w + c + 8 * k));
            __m256 wv = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
            a[k] = _mm256_add_ps(a[k], _mm256_mul_ps(wv, _mm256_loadu_ps(x + c + 8 * k)));
        }
    }
    for (int k = 0; k < 4; k++) _mm256_storeu_ps(p + 8 * k, a[k]);
#else
    for (int k = 0; k < LANES; k++) p[k] = 0.0f;
    for (; c < body; c += LANES)
        for (int k = 0; k < LANES; k++) p[k] = p[k] + bf16(w[c + k]) * x[c + k];
#endif
    for (; c < cols; c++) p[c % LANES] = p[c % LANES] + bf16(w[c]) * x[c];
    return reduce(p);
}

/* the same sums over a row already widened to float32 (several inputs per row) */
static float dot_f32(const float *w, const float *x, int cols) {
    float p[LANES];
    int c = 0, body = cols - cols % LANES;
#ifdef __AVX2__
    __m256 a[4];
    for (int k = 0; k < 4; k++) a[k] = _mm256_setzero_ps();
    for (; c < body; c += LANES)
        for (int k = 0; k < 4; k++)
            a[k] = _mm256_add_ps(a[k], _mm256_mul_ps(_mm256_loadu_ps(w + c + 8 * k),
                                                     _mm256_loadu_ps(x + c + 8 * k)));
    for (int k = 0; k < 4; k++) _mm256_storeu_ps(p + 8 * k, a[k]);
#else
    for (int k = 0; k < LANES; k++) p[k] = 0.0f;
    for (; c < body; c += LANES)
        for (int k = 0; k < LANES; k++) p[k] = p[k] + w[c + k] * x[c + k];
#endif
    for (; c < cols; c++) p[c % LANES] = p[c % LANES] + w[c] * x[c];
    return reduce(p);
}

#ifdef __AVX512F__
/* Four rows at once against one input (four independent add chains, the input loaded
   once for four rows): each output's lanes hold exactly dot()'s sums, column c in lane
   c % 32 added in column order, two 16-wide registers = the 32 lanes; the same bits. */
#define ROWS 4
static inline __m512 load_bf16(const uint16_t *w) {
    __m256i bits = _mm256_loadu_si256((const __m256i *)w);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

#define DOT_ROWS(NAME, TYPE, LOAD, WIDEN)                                                 \
static void NAME(const TYPE *w, const float *x, int cols, float *y) {                 \
    __m512 a[ROWS][2];                                                                  \
    float p[LANES];                                                                     \
    int body = cols - cols % LANES;                                                     \
    for (int r = 0; r < ROWS; r++) a[r][0] = a[r][1] = _mm512_setzero_ps();             \
    for (int c = 0; c < body; c += LANES) {                                             \
        __m512 x0 = _mm512_loadu_ps(x + c), x1 = _mm512_loadu_ps(x + c + 16);           \
        for (int r = 0; r < ROWS; r++) {                                                \
            const TYPE *row = w + (size_t)r * cols + c;                                 \
            a[r][0] = _mm512_add_ps(a[r][0], _mm512_mul_ps(LOAD(row), x0));             \
            a[r][1] = _mm512_add_ps(a[r][1], _mm512_mul_ps(LOAD(row + 16), x1));        \
        }                                                                               \
    }                                                                                   \
    for (int r = 0; r < ROWS; r++) {                                                    \
        const TYPE *row = w + (size_t)r * cols;                                         \
        _mm512_storeu_ps(p, a[r][0]);                                                   \
        _mm512_storeu_ps(p + 16, a[r][1]);                                              \
        for (int c = body; c < cols; c++)                                               \
            p[c % LANES] = p[c % LANES] + WIDEN(row[c]) * x[c];                         \
        y[r] = reduce(p);                                                               \
    }                                                                                   \
}
#define AS_FLOAT(v) (v)
DOT_ROWS(dot_rows_bf16, uint16_t, load_bf16, bf16)
DOT_ROWS(dot_rows_f32, float, _mm512_loadu_ps, AS_FLOAT)
#endif

typedef struct {
    const uint16_t *w; const float *x; float *y;
    int64_t r0, r1, rows, cols, t;
} job;

static void *run(void *arg) {
    const job *j = arg;
    int64_t r = j->r0;
#ifdef __AVX512F__
    float *block = j->t > 1 ? malloc(sizeof(float) * ROWS * (size_t)j->cols) : NULL;
    float out[ROWS];
    for (; r + ROWS <= j->r1; r += ROWS) {
        const uint16_t *rows = j->w + r * j->cols;
        if (block)   /* the rows widened once for all inputs */
            for (int64_t c = 0; c < ROWS * j->cols; c++) block[c] = bf16(rows[c]);
        for (int64_t t = 0; t < j->t; t++) {
            if (block) dot_rows_f32(block, j->x + t * j->cols, (int)j->cols, out);
            else dot_rows_bf16(rows, j->x + t * j->cols, (int)j->cols, out);
            for (int k = 0; k < ROWS; k++) j->y[t * j->rows + r + k] = out[k];
        }
    }
    free(block);
#endif
    float *wide = j->t > 1 ? malloc(sizeof(float) * (size_t)j->cols) : NULL;
    for (; r < j->r1; r++) {
        const uint16_t *row = j->w + r * j->cols;
        if (!wide) {
            for (int64_t t = 0; t < j->t; t++)
                j->y[t * j->rows + r] = dot(row, j->x + t * j->cols, (int)j->cols);
            continue;
        }
        for (int64_t c = 0; c < j->cols; c++) wide[c] = bf16(row[c]);  /* once per row */
        for (int64_t t = 0; t < j->t; t++)
            j->y[t * j->rows + r] = dot_f32(wide, j->x + t * j->cols, (int)j->cols);
    }
    free(wide);
    return NULL;
}

/* y [t, rows] = x [t, cols] W^T, W [rows, cols] bf16 bits; threads >= 1 */
void qgpu_bf16_matmul(const uint16_t *w, int64_t rows, int64_t cols, const float *x,
                      int64_t t, float *y, int threads) {
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 1 || rows * cols * t < (1 << 18)) threads = 1;
    job jobs[MAX_THREADS];
    pthread_t ids[MAX_THREADS];
    for (int k = 0; k < threads; k++) {
        jobs[k] = (job){w, x, y, rows * k / threads, rows * (k + 1) / threads, rows, cols, t};
    }
    for (int k = 1; k < threads; k++) pthread_create(&ids[k], NULL, run, &jobs[k]);
    run(&jobs[0]);
    for (int k = 1; k < threads; k++) pthread_join(ids[k], NULL);
}
