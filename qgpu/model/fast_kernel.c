/* qgpu native forward pass: one call computes one token through every layer of a
 * compiled (sparse) Qwen3.5 model (qgpu_forward), or, for teacher forcing, a run of known
 * tokens layer by layer (qgpu_forward_forced: the same computation per token). Built on first use by qgpu/model/fast_native.py with
 * the system C compiler, loaded with ctypes; the layouts below mirror its Structures.
 *
 * Arithmetic: float32, the operation order of qgpu/model/layers.py (hence of numpy and
 * transformers): every reduction the reference runs through np.sum uses numpy's pairwise
 * summation (8 accumulators per block of <= 128, halves above); exp is numpy's float32
 * SIMD algorithm (Cody-Waite reduction, P5/Q2 rational polynomial, 2^k by exponent add),
 * transcribed to scalar code with explicit fmaf so that results are bit-identical to
 * np.exp on float32 arrays (fast_native.py checks this at load time and falls back to the
 * C library's expf where numpy uses it); rsqrt is 1/sqrtf. Compile with
 * -ffp-contract=off and without -ffast-math.
 *
 * Sparse products skip inputs that are exactly 0: each output is the sum of its terms in
 * input order, as a sequential dot product computes it (the terms skipped are +-0); the
 * MLP's down sums take the units with a one-entry up row first (the planner's order),
 * which equals the reference wherever its sums are exact, as every other order does.
 *
 * With AVX2 (-march=native), the MLP's units and the conv outputs' silu run 8 lanes at a
 * time (the same IEEE operations lane by lane, fmaf as _mm256_fmadd_ps), lists of what is
 * nonzero are left-packed with a permute table; without it, the same scalar code as the
 * tails. Timing: qgpu_set_profile(buf) adds each layer's mixer and MLP seconds.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __AVX2__
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

/* --- numpy-compatible elementary functions --- */

static int use_libm_exp = 0;

void qgpu_set_exp_mode(int libm) { use_libm_exp = libm; }

static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float np_expf(float x) {
    if (use_libm_exp) return expf(x);
    if (x != x) return x;
    if (x >= 88.72283935546875f) return INFINITY;
    if (x <= -103.97208404541015625f) return 0.0f;
    const float magic = 0x1.8p23f, log2e = 1.442695040888963407359924681001892137f;
    float quadrant = x * log2e;
    quadrant = quadrant + magic;
    quadrant = quadrant - magic;
    float r = fmaf(quadrant, -6.93145752e-1f, x);
    r = fmaf(quadrant, -1.42860677e-6f, r);
    r = fmaf(quadrant, 0.0f, r);
    float num = fmaf(5.082762527590693718096e-04f, r, 6.757896990527504603057e-03f);
    num = fmaf(num, r, 5.114512081637298353406e-02f);
    num = fmaf(num, r, 2.473615434895520810817e-01f);
    num = fmaf(num, r, 7.257664613233124478488e-01f);
    num = fmaf(num, r, 9.999999999980870924916e-01f);
    float den = fmaf(2.159509375685829852307e-02f, r, -2.742335390411667452936e-01f);
    den = fmaf(den, r, 1.0f);
    float poly = num / den;
    int32_t q = (int32_t)quadrant;
    if (q <= -125) { /* result below the normal range: scale to 2^-125, then divide */
        int32_t diff = -(q + 125);
        poly = u2f(f2u(poly) + (uint32_t)((-125) << 23));
        return poly / (float)(1 << diff);
    }
    return u2f(f2u(poly) + (uint32_t)(q << 23));
}

void qgpu_exp(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = np_expf(x[i]);
}

static inline float silu(float x) {
    /* x / (1 + exp(-x)); exact shortcuts: 1 + exp(-x) rounds to 1 for x >= 17, and
       exp(-x) overflows to inf for x <= -89 (result -0) */
    if (x >= 17.0f || x == 0.0f) return x;  /* silu(+-0) = +-0 / 2 = +-0 */
    if (x <= -89.0f) return -0.0f;
    return x / (1.0f + np_expf(-x));
}

/* silu of n values in place: numpy's exp algorithm 8 lanes at a time (the same
   operations as np_expf, so the same bits), lanes by lane where a group holds a value
   outside the range where that is the whole computation (NaN, exp's denormal results) */
static void silu_array(float *a, int32_t n) {
    int32_t i = 0;
#ifdef __AVX2__
    if (!use_libm_exp) {
        const __m256 v17 = _mm256_set1_ps(17.0f), vm89 = _mm256_set1_ps(-89.0f),
                     vzero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f),
                     over = _mm256_set1_ps(88.72283935546875f), negzero = _mm256_set1_ps(-0.0f),
                     magic = _mm256_set1_ps(0x1.8p23f),
                     log2e = _mm256_set1_ps(1.442695040888963407359924681001892137f);
        for (; i + 8 <= n; i += 8) {
            const __m256 x = _mm256_loadu_ps(a + i);
            /* lanes computed with exp: -89 < x < 17, x != 0 (-x < 89: no denormal) */
            const __m256 mid = _mm256_and_ps(_mm256_and_ps(_mm256_cmp_ps(x, vm89, _CMP_GT_OQ),
                                                           _mm256_cmp_ps(x, v17, _CMP_LT_OQ)),
                                             _mm256_cmp_ps(x, vzero, _CMP_NEQ_OQ));
            const __m256 keep = _mm256_or_ps(_mm256_cmp_ps(x, v17, _CMP_GE_OQ),
                                             _mm256_cmp_ps(x, vzero, _CMP_EQ_OQ));
            const __m256 low = _mm256_cmp_ps(x, vm89, _CMP_LE_OQ);
            if (_mm256_movemask_ps(_mm256_or_ps(_mm256_or_ps(mid, keep), low)) != 0xff) {
                for (int32_t j = 0; j < 8; j++) a[i + j] = silu(a[i + j]);  /* NaN */
                continue;
            }
            if (!_mm256_movemask_ps(mid)) {
                _mm256_storeu_ps(a + i, _mm256_blendv_ps(x, negzero, low));
                continue;
            }
            const __m256 e = _mm256_xor_ps(x, negzero);  /* -x */
            __m256 quadrant = _mm256_mul_ps(e, log2e);
            quadrant = _mm256_add_ps(quadrant, magic);
            quadrant = _mm256_sub_ps(quadrant, magic);
            __m256 r = _mm256_fmadd_ps(quadrant, _mm256_set1_ps(-6.93145752e-1f), e);
            r = _mm256_fmadd_ps(quadrant, _mm256_set1_ps(-1.42860677e-6f), r);
            r = _mm256_fmadd_ps(quadrant, vzero, r);
            __m256 num = _mm256_fmadd_ps(_mm256_set1_ps(5.082762527590693718096e-04f), r,
                                         _mm256_set1_ps(6.757896990527504603057e-03f));
            num = _mm256_fmadd_ps(num, r, _mm256_set1_ps(5.114512081637298353406e-02f));
            num = _mm256_fmadd_ps(num, r, _mm256_set1_ps(2.473615434895520810817e-01f));
            num = _mm256_fmadd_ps(num, r, _mm256_set1_ps(7.257664613233124478488e-01f));
            num = _mm256_fmadd_ps(num, r, _mm256_set1_ps(9.999999999980870924916e-01f));
            __m256 den = _mm256_fmadd_ps(_mm256_set1_ps(2.159509375685829852307e-02f), r,
                                         _mm256_set1_ps(-2.742335390411667452936e-01f));
            den = _mm256_fmadd_ps(den, r, one);
            const __m256 poly = _mm256_div_ps(num, den);
            const __m256i q = _mm256_slli_epi32(_mm256_cvttps_epi32(quadrant), 23);
            __m256 ex = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(poly), q));
            ex = _mm256_blendv_ps(ex, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(e, over, _CMP_GE_OQ));
            const __m256 y = _mm256_div_ps(x, _mm256_add_ps(one, ex));
            _mm256_storeu_ps(a + i, _mm256_blendv_ps(_mm256_blendv_ps(x, negzero, low), y, mid));
        }
    }
#endif
    for (; i < n; i++) a[i] = silu(a[i]);
}

void qgpu_silu(float *a, int64_t n) { silu_array(a, (int32_t)n); }

static inline float sigmoid(float x) { return 1.0f / (1.0f + np_expf(-x)); }

static inline float softplus(float x) {  /* torch's threshold 20 */
    if (x != x) return x;
    return x > 20.0f ? x : log1pf(np_expf(x < 20.0f ? x : 20.0f));
}

/* numpy's pairwise sum of squares of a contiguous float32 vector */
static float pairwise_sumsq(const float *a, int64_t n) {
    if (n < 8) {
        float res = 0.0f;
        for (int64_t i = 0; i < n; i++) res += a[i] * a[i];
        return res;
    }
    if (n <= 128) {
        v8f r, x;
        memcpy(&x, a, 32);
        r = x * x;
        int64_t i;
        for (i = 8; i < n - (n % 8); i += 8) {
            memcpy(&x, a + i, 32);
            r += x * x;
        }
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i] * a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sumsq(a, n2) + pairwise_sumsq(a + n2, n - n2);
}

void qgpu_sumsq(const float *a, int64_t n, float *out) { *out = pairwise_sumsq(a, n); }

/* One GDN head's delta rule over the key's nonzero entries: m = S^T k;
   S += k (beta (v - m))^T. Shared by the per-token and the batched kernel, so the two
   stay bit-identical by construction. `delta` is dv floats of scratch. */
static inline void gdn_delta_rule(float *S, const int32_t *nzk, int32_t nk, const float *kn,
                                  const float *v, float beta, float *delta, int32_t dv) {
    for (int32_t e = 0; e < dv; e++) delta[e] = 0.0f;
    for (int32_t t = 0; t < nk; t++) {
        const float *row = S + (int64_t)nzk[t] * dv;
        float kj = kn[nzk[t]];
        for (int32_t e = 0; e < dv; e++) delta[e] += row[e] * kj;
    }
    for (int32_t e = 0; e < dv; e++) delta[e] = (v[e] - delta[e]) * beta;
    for (int32_t t = 0; t < nk; t++) {
        float *row = S + (int64_t)nzk[t] * dv;
        float kj = kn[nzk[t]];
        for (int32_t e = 0; e < dv; e++) row[e] += kj * delta[e];
    }
}

/* One GDN head's read o = S^T q over the query's nonzero entries (both kernels). */
static inline void gdn_read(const float *S, const int32_t *nzq, int32_t nq, const float *qn,
                            float *o, int32_t dv) {
    for (int32_t e = 0; e < dv; e++) o[e] = 0.0f;
    for (int32_t t = 0; t < nq; t++) {
        const float *row = S + (int64_t)nzq[t] * dv;
        float qj = qn[nzq[t]];
        for (int32_t e = 0; e < dv; e++) o[e] += row[e] * qj;
    }
}

/* --- model layout (mirrored by ctypes Structures in fast_native.py) --- */

typedef struct {          /* columns of a sparse matrix; rows ascending within a column */
    int32_t n_cols;
    const int32_t *col;   /* [n_cols] input index of each column */
    const int32_t *ptr;   /* [n_cols + 1] */
    const int32_t *row;   /* [nnz] output index */
    const float *val;     /* [nnz] */
} Csc;

typedef struct {
    int32_t kind;                 /* 0: the mixer adds nothing; 1: Gated DeltaNet */
    const float *in_norm;         /* [H] 1 + w */
    const float *post_norm;       /* [H] 1 + w */
    /* Gated DeltaNet: projection slots q [nk*dk], k [nk*dk], v [nh*dv], z [nh*dv], b, a */
    int32_t n_heads, n_key_heads, n_slots;
    const int32_t *head_ids;      /* [nh] value head index in the state */
    const int32_t *key_slot;      /* [nh] live key head serving each live value head */
    Csc proj;                     /* input: x (hidden); output: slots */
    int32_t n_active;             /* conv channels with a nonzero projection row */
    const int32_t *active;
    const float *conv_w;          /* [n_channels, K] */
    const float *neg_exp_a_log;   /* [nh] -exp(A_log) */
    const float *dt_bias;         /* [nh] */
    const float *norm_w;          /* [dv] */
    Csc out;                      /* one column per y slot (nh*dv); output: hidden */
    int32_t n_out_rows;
    const int32_t *out_rows;
    /* SwiGLU MLP over its live units. Units whose gate rows agree except in column
       bias_col share a form: gate[u] = form[unit_form[u]] + unit_bias[u] * u[bias_col] */
    int32_t n_units, n_forms, bias_col;
    Csc gate;                     /* input: u (hidden); output: forms */
    const int32_t *unit_form;
    const float *unit_bias;
    const int32_t *up_ptr;        /* CSR rows of up_proj, one per unit */
    const int32_t *up_col;
    const float *up_val;
    Csc down;                     /* one column per unit; output: hidden */
    int32_t n_down_rows;
    const int32_t *down_rows;
    Csc gate_hi, down_hi;         /* the parts for the second thread: forms rows from
                                     form_split, down (hidden) rows from down_rows[down_row_split] */
    int32_t form_split, down_row_split, single_split, other_split;
    int32_t n_single;             /* units [0, n_single) have 1 up entry: */
    const int32_t *up1_col;       /* [n_single] */
    const float *up1_val;
} Layer;

typedef struct {
    int32_t n_rows;               /* nonzero rows of the output head */
    const int32_t *row_ids;       /* [n_rows] vocabulary index, ascending */
    const int32_t *ptr, *col;     /* CSR */
    const float *val;
    int32_t first_zero_row;       /* smallest all-zero row (logit exactly 0), or -1 */
    int32_t max_row_nnz;
    int32_t n_head_cols;          /* columns any row uses */
    const int32_t *head_cols;
    const float *group_l1, *block_l1; /* max over the rows of sum |w| */
    /* bounds for argmax: level 1 groups of rows, each made of level 2 blocks */
    int32_t n_groups, block_rows;
    const int32_t *group_block;   /* [n_groups + 1] first block of each group */
    const int32_t *group_ptr;     /* [n_groups + 1] into group_col/max/min */
    const int32_t *group_col;
    const float *group_max, *group_min;
    const int32_t *block_ptr;     /* [n_blocks + 1] */
    const int32_t *block_col;
    const float *block_max, *block_min;
} Head;

typedef struct {
    int32_t hidden, n_layers, conv_k, dk, dv;
    float eps, sqrt_dk;
    const int32_t *embed_ptr;     /* [vocab + 1] CSR rows of the embedding */
    const int32_t *embed_col;     /* every entry whose bits are not 0 (-0.0 kept) */
    const float *embed_val;
    const float *final_norm;      /* [H] 1 + w */
    const Layer *layers;
    Head head;
    /* scratch, sized by the planner */
    float *h, *x, *mixed, *slots, *qkv, *qn, *kn, *o, *y, *units, *forms, *head_x;
    int32_t *nzq, *nzk, *nq, *nk, *nzch, *newc, *proc, *unit_list, *group_order;
    double *group_ub;
    float *conv_out, *acts;
    float *x2, *acts2;            /* the second thread's norm output and acts */
    int32_t *unit_list2, *n_acts, *n_first;  /* [2] each */
} Model;

/* The layout as this compiler lays it out: "Struct=sizeof Struct.field=offset ...",
   checked against the ctypes Structures at load time (fast_native.check_layout). */
#include <stddef.h>
#define SZ(T) #T "=%zu "
#define OF(T, f) #T "." #f "=%zu "
const char *qgpu_layout(void) {
    static char buf[8192];
    if (buf[0]) return buf;
    size_t n = 0;
#define PUT_S(T) n += (size_t)snprintf(buf + n, sizeof buf - n, SZ(T), sizeof(T))
#define PUT(T, f) n += (size_t)snprintf(buf + n, sizeof buf - n, OF(T, f), offsetof(T, f))
    PUT_S(Csc); PUT(Csc, n_cols); PUT(Csc, col); PUT(Csc, ptr); PUT(Csc, row); PUT(Csc, val);
    PUT_S(Layer); PUT(Layer, kind); PUT(Layer, in_norm); PUT(Layer, post_norm);
    PUT(Layer, n_heads); PUT(Layer, n_key_heads); PUT(Layer, n_slots); PUT(Layer, head_ids);
    PUT(Layer, key_slot); PUT(Layer, proj); PUT(Layer, n_active); PUT(Layer, active);
    PUT(Layer, conv_w); PUT(Layer, neg_exp_a_log); PUT(Layer, dt_bias); PUT(Layer, norm_w);
    PUT(Layer, out); PUT(Layer, n_out_rows); PUT(Layer, out_rows); PUT(Layer, n_units);
    PUT(Layer, n_forms); PUT(Layer, bias_col); PUT(Layer, gate); PUT(Layer, unit_form);
    PUT(Layer, unit_bias); PUT(Layer, up_ptr); PUT(Layer, up_col); PUT(Layer, up_val);
    PUT(Layer, down); PUT(Layer, n_down_rows); PUT(Layer, down_rows); PUT(Layer, gate_hi);
    PUT(Layer, down_hi); PUT(Layer, form_split); PUT(Layer, down_row_split);
    PUT(Layer, single_split); PUT(Layer, other_split); PUT(Layer, n_single);
    PUT(Layer, up1_col); PUT(Layer, up1_val);
    PUT_S(Head); PUT(Head, n_rows); PUT(Head, row_ids); PUT(Head, ptr); PUT(Head, col);
    PUT(Head, val); PUT(Head, first_zero_row); PUT(Head, max_row_nnz); PUT(Head, n_head_cols);
    PUT(Head, head_cols); PUT(Head, group_l1); PUT(Head, block_l1); PUT(Head, n_groups);
    PUT(Head, block_rows); PUT(Head, group_block); PUT(Head, group_ptr); PUT(Head, group_col);
    PUT(Head, group_max); PUT(Head, group_min); PUT(Head, block_ptr); PUT(Head, block_col);
    PUT(Head, block_max); PUT(Head, block_min);
    PUT_S(Model); PUT(Model, hidden); PUT(Model, n_layers); PUT(Model, conv_k); PUT(Model, dk);
    PUT(Model, dv); PUT(Model, eps); PUT(Model, sqrt_dk); PUT(Model, embed_ptr);
    PUT(Model, embed_col); PUT(Model, embed_val); PUT(Model, final_norm); PUT(Model, layers);
    PUT(Model, head); PUT(Model, h); PUT(Model, x); PUT(Model, mixed); PUT(Model, slots);
    PUT(Model, qkv); PUT(Model, qn); PUT(Model, kn); PUT(Model, o); PUT(Model, y);
    PUT(Model, units); PUT(Model, forms); PUT(Model, head_x); PUT(Model, nzq); PUT(Model, nzk);
    PUT(Model, nq); PUT(Model, nk); PUT(Model, nzch); PUT(Model, newc); PUT(Model, proc);
    PUT(Model, unit_list); PUT(Model, group_order); PUT(Model, group_ub); PUT(Model, conv_out);
    PUT(Model, acts); PUT(Model, x2); PUT(Model, acts2); PUT(Model, unit_list2);
    PUT(Model, n_acts); PUT(Model, n_first);
#undef PUT
#undef PUT_S
    return buf;
}

static void embed_row(const Model *m, int64_t token, float *h) {
    memset(h, 0, sizeof(float) * m->hidden);
    for (int32_t p = m->embed_ptr[token]; p < m->embed_ptr[token + 1]; p++)
        h[m->embed_col[p]] = m->embed_val[p];
}

/* --- pieces --- */

#ifdef __AVX2__
/* compress_lut[mask]: the lanes of mask's set bits, first, in order (for an 8-wide
   left-packing permute) */
static __m256i compress_lut[256];

__attribute__((constructor)) static void init_compress_lut(void) {
    for (int32_t mask = 0; mask < 256; mask++) {
        int32_t lanes[8] = {0}, n = 0;
        for (int32_t j = 0; j < 8; j++) if (mask >> j & 1) lanes[n++] = j;
        compress_lut[mask] = _mm256_loadu_si256((const __m256i *)lanes);
    }
}
#endif


static float norm_scale(const Model *m, const float *h) {
    float ms = pairwise_sumsq(h, m->hidden) / (float)m->hidden;
    return 1.0f / sqrtf(ms + m->eps);
}

static void normalize(const Model *m, const float *h, const float *w, float *out) {
    float r = norm_scale(m, h);
    for (int32_t i = 0; i < m->hidden; i++) out[i] = (h[i] * r) * w[i];
}

/* optional work counters (qgpu_set_counts): entries of each product computed, state rows
   and head rows touched; what the limit analysis of benchmarks/bench_machine_speed.py
   turns into bytes per token */
enum { C_GATE, C_GATE_COLS, C_PROJ, C_UNITS, C_ACTS, C_DOWN, C_UP, C_OUT, C_STATE_ROWS,
       C_CONV, C_HEAD_ROWS, C_TOKENS, C_N };
static int64_t *count_buf = NULL;

void qgpu_set_counts(int64_t *buf) { count_buf = buf; }

#define COUNT(k, n) do { if (count_buf) count_buf[k] += (n); } while (0)

static void csc_apply(const Csc *a, const float *x, float *acc, int32_t counter) {
    int64_t touched = 0, cols = 0;
    for (int32_t c = 0; c < a->n_cols; c++) {
        float xv = x[a->col[c]];
        if (xv == 0.0f) continue;
        touched += a->ptr[c + 1] - a->ptr[c];
        cols++;
        for (int32_t p = a->ptr[c]; p < a->ptr[c + 1]; p++) acc[a->row[p]] += a->val[p] * xv;
    }
    COUNT(counter, touched);
    if (counter == C_GATE) COUNT(C_GATE_COLS, cols);
}

/* l2norm of a head's vector v (n nonzeros, at nz ascending), written where nonzero */
static void l2norm_head(const float *v, int32_t d, float divisor, float *out, const int32_t *nz,
                        int32_t n) {
    if (n == 0) return;
    float ss;
    if (n == 1) ss = v[nz[0]] * v[nz[0]];
    else if (n == 2) ss = v[nz[0]] * v[nz[0]] + v[nz[1]] * v[nz[1]];
    else ss = pairwise_sumsq(v, d);
    float r = 1.0f / sqrtf(ss + 1e-6f);
    for (int32_t t = 0; t < n; t++) {
        float val = v[nz[t]] * r;
        out[nz[t]] = divisor != 1.0f ? val / divisor : val;
    }
}

/* indices of the nonzero entries of a[0..n), ascending; blocks of 8 zeros skipped fast */
static int32_t nonzero_entries(const float *a, int32_t n, int32_t *out) {
    int32_t k = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        v8u bits;
        memcpy(&bits, a + i, 32);
        bits &= 0x7fffffffu;
        if (!(bits[0] | bits[1] | bits[2] | bits[3] | bits[4] | bits[5] | bits[6] | bits[7]))
            continue;
        for (int32_t j = 0; j < 8; j++) if (a[i + j] != 0.0f) out[k++] = i + j;
    }
    for (; i < n; i++) if (a[i] != 0.0f) out[k++] = i;
    return k;
}

/* merge two ascending index lists without duplicates */
static int32_t merge(const int32_t *a, int32_t na, const int32_t *b, int32_t nb, int32_t *out) {
    int32_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        if (j == nb || (i < na && a[i] < b[j])) out[k++] = a[i++];
        else if (i == na || b[j] < a[i]) out[k++] = b[j++];
        else { out[k++] = a[i++]; j++; }
    }
    return k;
}

/* win/n_win: the channels whose conv window (state) holds a nonzero, ascending; kept with
   the state so that channels whose window and input are both zero are never visited */
static void gdn_layer(const Model *m, const Layer *L, float *S_all, float *conv, int32_t *win,
                      int32_t *n_win) {
    const int32_t dk = m->dk, dv = m->dv, K = m->conv_k, nh = L->n_heads, nkh = L->n_key_heads;
    const int32_t n_qk = nkh * dk, n_ch = 2 * n_qk + nh * dv;
    normalize(m, m->h, L->in_norm, m->x);
    /* slots and qkv are all zero on entry (the scratch is shared by every layer, whose
       channel counts differ): each layer clears all it wrote before it returns */
    csc_apply(&L->proj, m->x, m->slots, C_PROJ);
    const int32_t n_new = nonzero_entries(m->slots, n_ch, m->newc);
    const int32_t n_proc = merge(m->newc, n_new, win, *n_win, m->proc);
    int32_t n_nz = 0, kept = 0;
    for (int32_t t = 0; t < n_proc; t++) {  /* many independent misses in flight */
        __builtin_prefetch(conv + (int64_t)m->proc[t] * K, 1);
        __builtin_prefetch(L->conv_w + (int64_t)m->proc[t] * K, 0);
    }
    float *acc_out = m->conv_out;
    if (K == 4) {  /* Qwen3.5's kernel size, unrolled: the same operations */
        for (int32_t t = 0; t < n_proc; t++) {
            const int32_t c = m->proc[t];
            float *st = conv + (int64_t)c * 4;
            const float *w = L->conv_w + (int64_t)c * 4;
            const float in = m->slots[c], s1 = st[1], s2 = st[2], s3 = st[3];
            float acc = 0.0f;
            acc += w[0] * s1;
            acc += w[1] * s2;
            acc += w[2] * s3;
            acc += w[3] * in;
            st[0] = s1;
            st[1] = s2;
            st[2] = s3;
            st[3] = in;
            acc_out[t] = acc;
            win[kept] = c;
            kept += (s1 != 0.0f) | (s2 != 0.0f) | (s3 != 0.0f) | (in != 0.0f);
        }
    } else for (int32_t t = 0; t < n_proc; t++) {
        int32_t c = m->proc[t];
        float *st = conv + (int64_t)c * K;
        float in = m->slots[c];
        const float *w = L->conv_w + (int64_t)c * K;
        float acc = 0.0f;
        for (int32_t j = 0; j < K - 1; j++) acc += w[j] * st[j + 1];
        acc += w[K - 1] * in;
        for (int32_t j = 0; j < K - 1; j++) st[j] = st[j + 1];
        st[K - 1] = in;
        acc_out[t] = acc;
        int32_t any = 0;
        for (int32_t j = 0; j < K; j++) any |= st[j] != 0.0f;
        win[kept] = c;  /* branch-free append of the channels whose window is not 0 */
        kept += any;
    }
    COUNT(C_CONV, n_proc);
    silu_array(acc_out, n_proc);
    for (int32_t t = 0; t < n_proc; t++) {
        const int32_t c = m->proc[t];
        const float out = acc_out[t];
        m->qkv[c] = out;
        m->nzch[n_nz] = c;
        n_nz += out != 0.0f;
    }
    *n_win = kept;
    for (int32_t t = 0; t < n_new; t++) m->slots[m->newc[t]] = 0.0f;
    for (int32_t kh = 0; kh < nkh; kh++) m->nq[kh] = m->nk[kh] = 0;
    for (int32_t t = 0; t < n_nz && m->nzch[t] < 2 * n_qk; t++) {
        int32_t c = m->nzch[t];
        if (c < n_qk) { int32_t kh = c / dk; m->nzq[kh * dk + m->nq[kh]++] = c - kh * dk; }
        else { int32_t kh = (c - n_qk) / dk; m->nzk[kh * dk + m->nk[kh]++] = c - n_qk - kh * dk; }
    }
    for (int32_t kh = 0; kh < nkh; kh++) {
        l2norm_head(m->qkv + kh * dk, dk, m->sqrt_dk, m->qn + kh * dk, m->nzq + kh * dk, m->nq[kh]);
        l2norm_head(m->qkv + n_qk + kh * dk, dk, 1.0f, m->kn + kh * dk, m->nzk + kh * dk,
                    m->nk[kh]);
    }
    for (int32_t s = 0; s < nh; s++) {  /* prefetch the state rows to be written and read */
        const float *S = S_all + (int64_t)L->head_ids[s] * dk * dv;
        const int32_t ks = L->key_slot[s];
        for (int32_t t = 0; t < m->nk[ks]; t++)
            for (int32_t e = 0; e < dv; e += 16)
                __builtin_prefetch(S + (int64_t)m->nzk[ks * dk + t] * dv + e, 1);
        for (int32_t t = 0; t < m->nq[ks]; t++)
            for (int32_t e = 0; e < dv; e += 16)
                __builtin_prefetch(S + (int64_t)m->nzq[ks * dk + t] * dv + e, 0);
    }
    const float *z = m->slots + n_ch, *bb = z + nh * dv, *aa = bb + nh;
    memset(m->mixed, 0, sizeof(float) * m->hidden);
    int any_out = 0;
    for (int32_t s = 0; s < nh; s++) {
        float *S = S_all + (int64_t)L->head_ids[s] * dk * dv;
        float a_in = aa[s] + L->dt_bias[s];
        float decay = np_expf(L->neg_exp_a_log[s] * softplus(a_in));
        if (decay != 1.0f) for (int64_t i = 0; i < (int64_t)dk * dv; i++) S[i] *= decay;
        const int32_t ks = L->key_slot[s];
        const float *v = m->qkv + 2 * n_qk + s * dv;
        const int32_t nk = m->nk[ks], *nzk = m->nzk + ks * dk;
        const float *kn = m->kn + ks * dk;
        if (nk) gdn_delta_rule(S, nzk, nk, kn, v, sigmoid(bb[s]), m->o, dv);
        const int32_t nq = m->nq[ks], *nzq = m->nzq + ks * dk;
        if (!nq) continue;  /* reads 0: the head's output is 0 */
        float *o = m->o;
        gdn_read(S, nzq, nq, m->qn + ks * dk, o, dv);
        float r = 1.0f / sqrtf(pairwise_sumsq(o, dv) / (float)dv + m->eps);
        float *y = m->y + s * dv;
        const float *zs = z + s * dv;
        for (int32_t e = 0; e < dv; e++) y[e] = (L->norm_w[e] * (o[e] * r)) * silu(zs[e]);
        for (int32_t e = 0; e < dv; e++) {
            float ye = y[e];
            if (ye == 0.0f) continue;
            int32_t c = s * dv + e;
            for (int32_t p = L->out.ptr[c]; p < L->out.ptr[c + 1]; p++)
                m->mixed[L->out.row[p]] += L->out.val[p] * ye;
            COUNT(C_OUT, L->out.ptr[c + 1] - L->out.ptr[c]);
        }
        COUNT(C_STATE_ROWS, nq + nk);
        any_out = 1;
    }
    if (any_out)
        for (int32_t t = 0; t < L->n_out_rows; t++) m->h[L->out_rows[t]] += m->mixed[L->out_rows[t]];
    for (int32_t t = 0; t < n_proc; t++) m->qkv[m->proc[t]] = 0.0f;
    memset(m->slots + n_ch, 0, sizeof(float) * (L->n_slots - n_ch));  /* z, b, a */
}

static inline float unit_silu(float g) {  /* silu(gate) as silu() computes it */
    float s = g >= 17.0f ? g : 0.0f;
    if (g > -89.0f && g < 17.0f && g != 0.0f) s = g / (1.0f + np_expf(-g));
    return s;
}

/* the units [u0, u1) whose up row has 1 entry (silu(gate) * up written directly) or more
   (listed when silu(gate) is not +-0), by scalar code: act list from n_act on, in
   order; returns the new length */
static int32_t mlp_units_scalar(const Model *m, const Layer *L, const float *x, float bias_in,
                                int32_t u0, int32_t u1, int32_t *list, float *acts,
                                int32_t n_act) {
    for (int32_t u = u0; u < u1; u++) {
        const float s = unit_silu(m->forms[L->unit_form[u]] + L->unit_bias[u] * bias_in);
        if (s == 0.0f) continue;  /* +-0 adds +-0 */
        float up = 0.0f;
        if (u < L->n_single) up += L->up1_val[u] * x[L->up1_col[u]];
        else for (int32_t p = L->up_ptr[u]; p < L->up_ptr[u + 1]; p++)
            up += L->up_val[p] * x[L->up_col[p]];
        list[n_act] = u;
        acts[n_act] = s * up;
        n_act += acts[n_act] != 0.0f;
    }
    return n_act;
}

/* act = silu(gate) * up of every unit of [s0, s1) (units whose up row has one entry) and
   [o0, o1) (the others) whose act is not +-0 (the others add +-0), listed in unit order:
   the first kind 8 at a time: silu by select of its saturated sides, up by gathers, the
   list left-packed; then the others: the units on (silu(gate) not +-0) listed 8 at a
   time, then their up rows one by one. When a gate is between the saturated sides (exp
   needed: rare), everything is redone by scalar code. *n_first: how many acts come from
   [s0, s1). Returns the list's length. */
static int32_t mlp_units(const Model *m, const Layer *L, const float *x, int32_t s0, int32_t s1,
                         int32_t o0, int32_t o1, int32_t *list, float *acts, int32_t *n_first) {
    const float bias_in = L->bias_col >= 0 ? x[L->bias_col] : 0.0f;
    int32_t n_act = 0, between = 0;
#ifdef __AVX2__
    {
        int32_t u = s0;
        const __m256 vb = _mm256_set1_ps(bias_in), v17 = _mm256_set1_ps(17.0f),
                     vm89 = _mm256_set1_ps(-89.0f), vzero = _mm256_setzero_ps();
        const __m256i step = _mm256_set1_epi32(8), lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i ids = _mm256_add_epi32(lanes, _mm256_set1_epi32(s0));
        __m256 vbetween = vzero;
#define GATE_8()                                                                          \
        const __m256 g = _mm256_add_ps(                                                   \
            _mm256_i32gather_ps(m->forms, _mm256_loadu_si256((const __m256i *)(L->unit_form + u)), 4), \
            _mm256_mul_ps(_mm256_loadu_ps(L->unit_bias + u), vb));                        \
        const __m256 on = _mm256_cmp_ps(g, v17, _CMP_GE_OQ);                             \
        vbetween = _mm256_or_ps(vbetween, _mm256_and_ps(                                  \
            _mm256_and_ps(_mm256_cmp_ps(g, vm89, _CMP_GT_OQ), _mm256_cmp_ps(g, v17, _CMP_LT_OQ)), \
            _mm256_cmp_ps(g, vzero, _CMP_NEQ_OQ)))
        for (; u + 8 <= s1; u += 8, ids = _mm256_add_epi32(ids, step)) {
            GATE_8();
            const __m256 xv = _mm256_i32gather_ps(x, _mm256_loadu_si256((const __m256i *)(L->up1_col + u)), 4);
            const __m256 act = _mm256_mul_ps(_mm256_and_ps(g, on),
                                             _mm256_mul_ps(_mm256_loadu_ps(L->up1_val + u), xv));
            const int32_t mask = _mm256_movemask_ps(
                _mm256_and_ps(on, _mm256_cmp_ps(act, vzero, _CMP_NEQ_UQ)));
            _mm256_storeu_si256((__m256i *)(list + n_act),
                                _mm256_permutevar8x32_epi32(ids, compress_lut[mask]));
            _mm256_storeu_ps(acts + n_act, _mm256_permutevar8x32_ps(act, compress_lut[mask]));
            n_act += __builtin_popcount(mask);
        }
        n_act = mlp_units_scalar(m, L, x, bias_in, u, s1, list, acts, n_act);  /* no exp: redone if needed */
        *n_first = n_act;
        u = o0;
        ids = _mm256_add_epi32(lanes, _mm256_set1_epi32(o0));
        int32_t n_on = n_act;  /* the units on are listed after the acts */
        for (; u + 8 <= o1; u += 8, ids = _mm256_add_epi32(ids, step)) {
            GATE_8();
            const int32_t mask = _mm256_movemask_ps(on);
            _mm256_storeu_si256((__m256i *)(list + n_on),
                                _mm256_permutevar8x32_epi32(ids, compress_lut[mask]));
            n_on += __builtin_popcount(mask);
        }
#undef GATE_8
        between = _mm256_movemask_ps(vbetween) != 0;
        if (!between) {
            for (int32_t t = n_act; t < n_on; t++) {  /* in place: n_act <= t */
                const int32_t v = list[t];
                /* no gate between the sides: silu(gate) = gate for the units on */
                const float s = m->forms[L->unit_form[v]] + L->unit_bias[v] * bias_in;
                float up = 0.0f;
                for (int32_t p = L->up_ptr[v]; p < L->up_ptr[v + 1]; p++)
                    up += L->up_val[p] * x[L->up_col[p]];
                list[n_act] = v;
                acts[n_act] = s * up;
                n_act += acts[n_act] != 0.0f;
            }
            n_act = mlp_units_scalar(m, L, x, bias_in, u, o1, list, acts, n_act);
        }
    }
#else
    between = 1;
#endif
    if (between) {
        n_act = mlp_units_scalar(m, L, x, bias_in, s0, s1, list, acts, 0);
        *n_first = n_act;
        n_act = mlp_units_scalar(m, L, x, bias_in, o0, o1, list, acts, n_act);
    }
    return n_act;
}

static void down_apply(const Csc *d, const int32_t *list, const float *acts, int32_t a,
                       int32_t b, float *mixed) {
    const int32_t *d_ptr = d->ptr, *d_row = d->row;
    const float *d_val = d->val;
    for (int32_t t = a; t < b; t++) {
        const int32_t v = list[t];
        const float act = acts[t];
        for (int32_t p = d_ptr[v]; p < d_ptr[v + 1]; p++) mixed[d_row[p]] += d_val[p] * act;
    }
}

/* --- two threads: a persistent worker runs part 1 of each split step while the caller
   runs part 0 (spin-waiting, then yielding); each part writes only its own outputs and
   both finish before the step returns, so the result is the one-thread result, bit for
   bit, whatever the thread count --- */

typedef void (*part_fn)(const Model *m, const Layer *L, int part);

static int n_threads = 1;
static atomic_int team_epoch, team_done, team_started, team_claimed;
static part_fn team_fn;
static const Model *team_m;
static const Layer *team_L;
static pthread_t team_thread;
static pthread_mutex_t team_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void relax(int64_t *spins) {
#ifdef __x86_64__
    __builtin_ia32_pause();
#endif
    if (++*spins > 4000) sched_yield();
}

static void *team_worker(void *arg) {
    (void)arg;
    int seen = 0;
    for (;;) {
        int64_t spins = 0;
        while (atomic_load_explicit(&team_epoch, memory_order_acquire) == seen) relax(&spins);
        seen = atomic_load_explicit(&team_epoch, memory_order_acquire);
        int expected = seen - 1;  /* part 1 of task `seen` is not claimed yet */
        if (!atomic_compare_exchange_strong(&team_claimed, &expected, seen)) continue;
        team_fn(team_m, team_L, 1);
        atomic_store_explicit(&team_done, seen, memory_order_release);
    }
    return NULL;
}

static void team_after_fork(void) { atomic_store(&team_started, 0); }

void qgpu_set_threads(int n) { n_threads = n > 1 ? 2 : 1; }

/* run fn's two parts (on two threads when they are on and the team is free): part 1 is
   claimed by whichever thread gets to it first, so a worker that the system has not
   scheduled is passed by (the caller runs both parts) instead of waited for */
static void run_parts(const Model *m, const Layer *L, part_fn fn, int parallel) {
    if (!parallel) { fn(m, L, 0); fn(m, L, 1); return; }
    team_fn = fn; team_m = m; team_L = L;
    int e = atomic_load_explicit(&team_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&team_epoch, e, memory_order_release);
    fn(m, L, 0);
    int expected = e - 1;
    if (atomic_compare_exchange_strong(&team_claimed, &expected, e)) { fn(m, L, 1); return; }
    int64_t spins = 0;
    while (atomic_load_explicit(&team_done, memory_order_acquire) != e) relax(&spins);
}

static int team_begin(void) {  /* 1 when this call may use the worker */
    if (n_threads < 2 || pthread_mutex_trylock(&team_lock) != 0) return 0;
    if (!atomic_load(&team_started)) {
        static int registered = 0;
        if (!registered) { pthread_atfork(NULL, NULL, team_after_fork); registered = 1; }
        atomic_store(&team_epoch, 0);
        atomic_store(&team_done, 0);
        atomic_store(&team_claimed, 0);
        if (pthread_create(&team_thread, NULL, team_worker, NULL) != 0) {
            pthread_mutex_unlock(&team_lock);
            return 0;
        }
        pthread_detach(team_thread);
        atomic_store(&team_started, 1);
    }
    return 1;
}

static void team_end(int used) { if (used) pthread_mutex_unlock(&team_lock); }

/* --- the MLP in three split steps: (1) the norm and each part's rows of the gate
   forms; (2) each part's units (part 0: the first halves of both unit kinds); (3) each
   part's rows of the down product, over the acts in unit order (part 0's units of the
   first kind, part 1's, part 0's others, part 1's), and of the residual --- */

static void mlp_gate_part(const Model *m, const Layer *L, int part) {
    float *x = part ? m->x2 : m->x;
    normalize(m, m->h, L->post_norm, x);
    const int32_t r0 = part ? L->form_split : 0, r1 = part ? L->n_forms : L->form_split;
    memset(m->forms + r0, 0, sizeof(float) * (r1 - r0));
    csc_apply(part ? &L->gate_hi : &L->gate, x, m->forms, C_GATE);
}

static void mlp_units_part(const Model *m, const Layer *L, int part) {
    const int32_t n1 = L->n_single, nu = L->n_units;
    const int32_t s0 = part ? L->single_split : 0, s1 = part ? n1 : L->single_split;
    const int32_t o0 = part ? L->other_split : n1, o1 = part ? nu : L->other_split;
    m->n_acts[part] = mlp_units(m, L, part ? m->x2 : m->x, s0, s1, o0, o1,
                                part ? m->unit_list2 : m->unit_list, part ? m->acts2 : m->acts,
                                &m->n_first[part]);
}

static void mlp_down_part(const Model *m, const Layer *L, int part) {
    const Csc *d = part ? &L->down_hi : &L->down;
    const int32_t a = part ? L->down_row_split : 0, b = part ? L->n_down_rows : L->down_row_split;
    const int32_t *rows = L->down_rows;
    for (int32_t t = a; t < b; t++) m->mixed[rows[t]] = 0.0f;
    down_apply(d, m->unit_list, m->acts, 0, m->n_first[0], m->mixed);
    down_apply(d, m->unit_list2, m->acts2, 0, m->n_first[1], m->mixed);
    down_apply(d, m->unit_list, m->acts, m->n_first[0], m->n_acts[0], m->mixed);
    down_apply(d, m->unit_list2, m->acts2, m->n_first[1], m->n_acts[1], m->mixed);
    for (int32_t t = a; t < b; t++) m->h[rows[t]] += m->mixed[rows[t]];
}

static void mlp_layer(const Model *m, const Layer *L) {
    const int used = team_begin();
    run_parts(m, L, mlp_gate_part, used);
    run_parts(m, L, mlp_units_part, used);
    run_parts(m, L, mlp_down_part, used);
    team_end(used);
    if (count_buf) {
        COUNT(C_UNITS, L->n_units);
        for (int part = 0; part < 2; part++) {
            const int32_t *list = part ? m->unit_list2 : m->unit_list;
            COUNT(C_ACTS, m->n_acts[part]);
            for (int32_t t = 0; t < m->n_acts[part]; t++) {
                COUNT(C_DOWN, L->down.ptr[list[t] + 1] - L->down.ptr[list[t]]
                      + L->down_hi.ptr[list[t] + 1] - L->down_hi.ptr[list[t]]);
                if (list[t] >= L->n_single)
                    COUNT(C_UP, L->up_ptr[list[t] + 1] - L->up_ptr[list[t]]);
            }
        }
    }
}

/* --- output head --- */

static inline float head_row(const Head *hd, int32_t r, const float *x) {
    float acc = 0.0f;
    for (int32_t p = hd->ptr[r]; p < hd->ptr[r + 1]; p++) acc += hd->val[p] * x[hd->col[p]];
    return acc;
}

static void bound(const int32_t *cols, const float *mx, const float *mn, int32_t a, int32_t b,
                  const float *x, double *ub, double *mag) {
    double u = 0.0, g = 0.0;
    for (int32_t p = a; p < b; p++) {
        double xv = x[cols[p]];
        double hi = mx[p] * xv, lo = mn[p] * xv;
        u += hi > lo ? hi : lo;
        g += fabs(hi) > fabs(lo) ? fabs(hi) : fabs(lo);
    }
    *ub = u;
    *mag = g;
}

/* argmax of the head's logits (first index on ties, as np.argmax), without computing
   rows whose block bound proves them below the best value found */
static int32_t head_argmax_in(const Model *m, const float *x, double *group_ub,
                              int32_t *group_order);

static int32_t head_argmax(const Model *m, const float *x) {
    return head_argmax_in(m, x, m->group_ub, m->group_order);
}

/* head_argmax with the caller's scratch (n_groups each) */
static int32_t head_argmax_in(const Model *m, const float *x, double *group_ub,
                              int32_t *group_order) {
    const Head *hd = &m->head;
    float best = -INFINITY;
    int32_t best_id = INT32_MAX;
    if (hd->first_zero_row >= 0) { best = 0.0f; best_id = hd->first_zero_row; }
    const double slack = (hd->max_row_nnz + 4) * 0x1p-23, tiny = 1e-30;
    double xmax = 0.0;
    for (int32_t t = 0; t < hd->n_head_cols; t++) {
        double a = fabs((double)x[hd->head_cols[t]]);
        if (!(a <= xmax)) xmax = a;  /* NaN propagates */
    }
    if (!isfinite(xmax)) return -1;
    for (int32_t g = 0; g < hd->n_groups; g++) {
        double ub, mag, l1 = hd->group_l1[g] * xmax;
        bound(hd->group_col, hd->group_max, hd->group_min, hd->group_ptr[g], hd->group_ptr[g + 1],
              x, &ub, &mag);
        ub = ub + mag * slack + tiny;
        l1 = l1 + l1 * slack + tiny;
        group_ub[g] = ub < l1 ? ub : l1;
        group_order[g] = g;
    }
    for (int32_t i = 1; i < hd->n_groups; i++) {  /* groups by decreasing bound */
        int32_t g = group_order[i], j = i;
        while (j > 0 && group_ub[group_order[j - 1]] < group_ub[g]) {
            group_order[j] = group_order[j - 1];
            j--;
        }
        group_order[j] = g;
    }
    for (int32_t i = 0; i < hd->n_groups; i++) {
        int32_t g = group_order[i];
        if (group_ub[g] < (double)best) break;
        for (int32_t b = hd->group_block[g]; b < hd->group_block[g + 1]; b++) {
            double ub, mag, l1 = hd->block_l1[b] * xmax;
            if (l1 + l1 * slack + tiny < (double)best) continue;
            bound(hd->block_col, hd->block_max, hd->block_min, hd->block_ptr[b],
                  hd->block_ptr[b + 1], x, &ub, &mag);
            if (ub + mag * slack + tiny < (double)best) continue;
            int32_t end = (b + 1) * hd->block_rows;
            if (end > hd->n_rows) end = hd->n_rows;
            for (int32_t r = b * hd->block_rows; r < end; r++) {
                float v = head_row(hd, r, x);
                COUNT(C_HEAD_ROWS, 1);
                if (v != v) return -1;  /* NaN: np.argmax picks the first NaN */
                int32_t id = hd->row_ids[r];
                if (v > best || (v == best && id < best_id)) { best = v; best_id = id; }
            }
        }
    }
    return best_id;
}

/* --- optional timing: seconds per layer part, accumulated into a caller's buffer of
   2 * n_layers + 1 doubles (mixer and MLP of each layer, then the final norm and head) */

static double *prof_buf = NULL;

void qgpu_set_profile(double *buf) { prof_buf = buf; }

static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* One token through the model. states[i], convs[i], wins[i], win_counts[i]: layer i's
   recurrent state [Hv, dk, dv], live-channel conv state, and its list of channels with
   a nonzero window (NULL for other layers). logits (or NULL):
   the full vocabulary row, zero-filled by the caller. Returns the greedy token when
   want_argmax (computed from logits when given), else 0; -1 when the head's input is not
   finite and the caller must take the argmax of the full logits. */
int32_t qgpu_forward(const Model *m, float *const *states, float *const *convs,
                     int32_t *const *wins, int32_t *win_counts, int64_t token,
                     float *logits, int32_t want_argmax) {
    embed_row(m, token, m->h);
    COUNT(C_TOKENS, 1);
    double *prof = prof_buf, t0 = prof ? now() : 0.0, t1;
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->kind == 1 && L->n_heads)
            gdn_layer(m, L, states[i], convs[i], wins[i], win_counts + i);
        if (prof) { t1 = now(); prof[2 * i] += t1 - t0; t0 = t1; }
        if (L->n_units) mlp_layer(m, L);
        if (prof) { t1 = now(); prof[2 * i + 1] += t1 - t0; t0 = t1; }
    }
    normalize(m, m->h, m->final_norm, m->head_x);
    const Head *hd = &m->head;
    int32_t out = 0;
    if (logits) {
        for (int32_t r = 0; r < hd->n_rows; r++) logits[hd->row_ids[r]] = head_row(hd, r, m->head_x);
    } else if (want_argmax) {
        out = head_argmax(m, m->head_x);
    }
    if (prof) prof[2 * m->n_layers] += now() - t0;
    return out;
}

/* The full logits of the token last run (after qgpu_forward returned -1). */
void qgpu_head_logits(const Model *m, float *logits) {
    const Head *hd = &m->head;
    for (int32_t r = 0; r < hd->n_rows; r++) logits[hd->row_ids[r]] = head_row(hd, r, m->head_x);
}

/* Teacher forcing: n known tokens through the model layer by layer (every token through
   layer i, then every token through layer i + 1), each token exactly as qgpu_forward
   runs it (the same functions on the same values: a layer's state sees its tokens in
   order either way), so that the layer's weights are reused while in cache. hs: n *
   hidden floats of scratch (the residual stream of each token). greedy[t]: the greedy
   token after tokens[0..t] (-1 where the head's input is not finite: the caller takes
   the argmax of qgpu_head_logits_of(hs + t * hidden)). */
void qgpu_forward_forced(Model *m, float *const *states, float *const *convs,
                         int32_t *const *wins, int32_t *win_counts, const int64_t *tokens,
                         int32_t n, float *hs, int32_t *greedy) {
    float *const h0 = m->h;
    const int64_t H = m->hidden;
    for (int32_t t = 0; t < n; t++)
        embed_row(m, tokens[t], hs + t * H);
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        for (int32_t t = 0; t < n; t++) {
            m->h = hs + t * H;
            if (L->kind == 1 && L->n_heads)
                gdn_layer(m, L, states[i], convs[i], wins[i], win_counts + i);
            if (L->n_units) mlp_layer(m, L);
        }
    }
    for (int32_t t = 0; t < n; t++) {
        normalize(m, hs + t * H, m->final_norm, m->head_x);
        greedy[t] = head_argmax(m, m->head_x);
    }
    m->h = h0;
}

/* The full logits (zero-filled by the caller) of a residual stream h (after the last
   layer). */
void qgpu_head_logits_of(Model *m, const float *h, float *logits) {
    normalize(m, h, m->final_norm, m->head_x);
    qgpu_head_logits(m, logits);
}

#include "fast_batch.c"
