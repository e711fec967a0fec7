/* fast_math.c: #included by fast_kernel.c (one translation unit): numpy-compatible exp,
 * silu, sigmoid, softplus and pairwise sums, and one GDN head's delta rule and read,
 * shared by the per-token and the batched kernel. */

/* --- numpy-compatible elementary functions --- */

static int use_libm_exp = 0;

void qgpu_set_exp_mode(int libm) { use_libm_exp = libm; }

static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* numpy's float32 exp: the range reduction and the rational approximation (np_expf and
   the vector exps below run these operations, so every lane gets np_expf's bits) */
#define EXP_MAGIC 0x1.8p23f
#define EXP_LOG2E 1.442695040888963407359924681001892137f
#define EXP_LN2_HI -6.93145752e-1f
#define EXP_LN2_LO -1.42860677e-6f
#define EXP_NUM0 5.082762527590693718096e-04f
#define EXP_NUM1 6.757896990527504603057e-03f
#define EXP_NUM2 5.114512081637298353406e-02f
#define EXP_NUM3 2.473615434895520810817e-01f
#define EXP_NUM4 7.257664613233124478488e-01f
#define EXP_NUM5 9.999999999980870924916e-01f
#define EXP_DEN0 2.159509375685829852307e-02f
#define EXP_DEN1 -2.742335390411667452936e-01f

static float np_expf(float x) {
    if (use_libm_exp) return expf(x);
    if (x != x) return x;
    if (x >= 88.72283935546875f) return INFINITY;
    if (x <= -103.97208404541015625f) return 0.0f;
    float quadrant = x * EXP_LOG2E;
    quadrant = quadrant + EXP_MAGIC;
    quadrant = quadrant - EXP_MAGIC;
    float r = fmaf(quadrant, EXP_LN2_HI, x);
    r = fmaf(quadrant, EXP_LN2_LO, r);
    r = fmaf(quadrant, 0.0f, r);
    float num = fmaf(EXP_NUM0, r, EXP_NUM1);
    num = fmaf(num, r, EXP_NUM2);
    num = fmaf(num, r, EXP_NUM3);
    num = fmaf(num, r, EXP_NUM4);
    num = fmaf(num, r, EXP_NUM5);
    float den = fmaf(EXP_DEN0, r, EXP_DEN1);
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

/* exp of W / 32 lanes where no lane overflows or has a denormal result: np_expf's
   operations on vectors (W: 256 or 512, the intrinsics' width) */
#define DEFINE_VEXP(W, V, VI)                                                             \
    static inline V vexp##W(V e) {                                                        \
        V quadrant = _mm##W##_mul_ps(e, _mm##W##_set1_ps(EXP_LOG2E));                     \
        quadrant = _mm##W##_add_ps(quadrant, _mm##W##_set1_ps(EXP_MAGIC));                \
        quadrant = _mm##W##_sub_ps(quadrant, _mm##W##_set1_ps(EXP_MAGIC));                \
        V r = _mm##W##_fmadd_ps(quadrant, _mm##W##_set1_ps(EXP_LN2_HI), e);               \
        r = _mm##W##_fmadd_ps(quadrant, _mm##W##_set1_ps(EXP_LN2_LO), r);                 \
        r = _mm##W##_fmadd_ps(quadrant, _mm##W##_setzero_ps(), r);                        \
        V num = _mm##W##_fmadd_ps(_mm##W##_set1_ps(EXP_NUM0), r, _mm##W##_set1_ps(EXP_NUM1)); \
        num = _mm##W##_fmadd_ps(num, r, _mm##W##_set1_ps(EXP_NUM2));                      \
        num = _mm##W##_fmadd_ps(num, r, _mm##W##_set1_ps(EXP_NUM3));                      \
        num = _mm##W##_fmadd_ps(num, r, _mm##W##_set1_ps(EXP_NUM4));                      \
        num = _mm##W##_fmadd_ps(num, r, _mm##W##_set1_ps(EXP_NUM5));                      \
        V den = _mm##W##_fmadd_ps(_mm##W##_set1_ps(EXP_DEN0), r, _mm##W##_set1_ps(EXP_DEN1)); \
        den = _mm##W##_fmadd_ps(den, r, _mm##W##_set1_ps(1.0f));                          \
        const V poly = _mm##W##_div_ps(num, den);                                         \
        const VI q = _mm##W##_slli_epi32(_mm##W##_cvttps_epi32(quadrant), 23);            \
        return _mm##W##_castsi##W##_ps(_mm##W##_add_epi32(_mm##W##_castps_si##W(poly), q)); \
    }
#ifdef __AVX512F__
DEFINE_VEXP(512, __m512, __m512i)
#endif
#ifdef __AVX2__
DEFINE_VEXP(256, __m256, __m256i)
#endif

/* silu of n values in place: numpy's exp algorithm 16 or 8 lanes at a time (vexp: the
   same operations as np_expf, so the same bits), lanes by lane where a group holds a value
   outside the range where that is the whole computation (NaN, exp's denormal results) */
static void silu_array(float *a, int32_t n) {
    int32_t i = 0;
#ifdef __AVX512F__
    if (!use_libm_exp) {  /* the AVX2 path's operations, 16 lanes */
        const __m512 v17 = _mm512_set1_ps(17.0f), vm89 = _mm512_set1_ps(-89.0f),
                     vzero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.0f),
                     over = _mm512_set1_ps(88.72283935546875f), negzero = _mm512_set1_ps(-0.0f);
        for (; i + 16 <= n; i += 16) {
            const __m512 x = _mm512_loadu_ps(a + i);
            const __mmask16 mid = _mm512_cmp_ps_mask(x, vm89, _CMP_GT_OQ)
                                  & _mm512_cmp_ps_mask(x, v17, _CMP_LT_OQ)
                                  & _mm512_cmp_ps_mask(x, vzero, _CMP_NEQ_OQ);
            const __mmask16 keep = _mm512_cmp_ps_mask(x, v17, _CMP_GE_OQ)
                                   | _mm512_cmp_ps_mask(x, vzero, _CMP_EQ_OQ);
            const __mmask16 low = _mm512_cmp_ps_mask(x, vm89, _CMP_LE_OQ);
            if ((__mmask16)(mid | keep | low) != 0xffff) {
                for (int32_t j = 0; j < 16; j++) a[i + j] = silu(a[i + j]);  /* NaN */
                continue;
            }
            const __m512 sat = _mm512_mask_blend_ps(low, x, negzero);
            if (!mid) {
                _mm512_storeu_ps(a + i, sat);
                continue;
            }
            const __m512 e = _mm512_xor_ps(x, negzero);  /* -x */
            __m512 ex = vexp512(e);
            ex = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(e, over, _CMP_GE_OQ), ex,
                                      _mm512_set1_ps(INFINITY));
            const __m512 y = _mm512_div_ps(x, _mm512_add_ps(one, ex));
            _mm512_storeu_ps(a + i, _mm512_mask_blend_ps(mid, sat, y));
        }
    }
#endif
#ifdef __AVX2__
    if (!use_libm_exp) {
        const __m256 v17 = _mm256_set1_ps(17.0f), vm89 = _mm256_set1_ps(-89.0f),
                     vzero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f),
                     over = _mm256_set1_ps(88.72283935546875f), negzero = _mm256_set1_ps(-0.0f);
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
            __m256 ex = vexp256(e);
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
