/* qgpu batched teacher forcing, the pieces (included by fast_batch.c): the tables and
 * scratch, norms over rows of positions, sparse products by rows and by columns,
 * adds into the residual stream, transposes. See fast_batch.c for why every value is
 * the per-token kernel's, bit for bit. */
#include <stdlib.h>

/* a product's rows (mirrored by fast_native.BatchRows): output row ids, and per row its
   entries in ascending input order (the per-token kernel's order of terms) */
typedef struct {
    int32_t n_rows;
    const int32_t *row, *ptr, *col;
    const float *val;
} BatchRows;

/* per layer, what the batched kernel reads besides the Layer (fast_native.BatchLayer):
   proj (input: hidden), gate forms (input: hidden), out (input: y slots) by rows; the
   hidden columns the MLP reads (gate forms, up rows, bias column) */
typedef struct {
    BatchRows proj, gate, out;
    int32_t n_xcols;
    const int32_t *xcols;
} BatchLayer;

const char *qgpu_batch_layout(void) {
    static char buf[2048];
    if (buf[0]) return buf;
    size_t n = 0;  /* PUT_S, PUT: fast_layout.c */
    PUT_S(BatchRows); PUT(BatchRows, n_rows); PUT(BatchRows, row); PUT(BatchRows, ptr);
    PUT(BatchRows, col); PUT(BatchRows, val);
    PUT_S(BatchLayer); PUT(BatchLayer, proj); PUT(BatchLayer, gate);
    PUT(BatchLayer, out); PUT(BatchLayer, n_xcols); PUT(BatchLayer, xcols);
    return buf;
}

typedef struct {
    int32_t n, N;          /* positions, row stride (>= n, a multiple of 8) */
    int64_t chans;         /* the most conv channels of a layer */
    float *HT;             /* [hidden][N] residual stream */
    uint8_t *hnz;          /* [hidden] row of HT may hold a value other than +0 (the
                              others are all +0, also between calls) */
    float *XF;             /* [hidden][N] a norm's output, rows of the columns read */
    uint8_t *xnz;          /* [hidden] row of XF holds a nonzero */
    float *MX;             /* [hidden][N] a product into the residual stream */
    uint8_t *mxt;          /* [hidden] row of MX touched (zeroed and written) */
    float *ST;             /* [max slots or forms][N] projections / gate forms */
    uint8_t *stt;          /* row of ST touched */
    float *CT;             /* [max channels][N] conv outputs */
    uint8_t *cact;         /* channel active (row of CT written) */
    uint8_t *wflag;        /* [channels] in the window list (all 0 between layers) */
    float *Y;              /* [max heads * dv][N] gated outputs; row 0: a unit's acts */
    uint8_t *yt;           /* row of Y touched */
    float *r, *row, *row2, *pw;  /* [N] each; pw: pairwise scratch */
    int32_t *any_out;      /* [N] */
    float *tmp;            /* [dk + 2 dv] dense head vector, v, z */
    uint8_t *ynz;          /* [y rows]: row of Y holds a nonzero */
    int32_t *hmask;        /* [N]: the head read at this position */
    float *vt, *ot;        /* [N][dv]: a head's v and o * r, by position */
    float *o, *head_x;     /* [dv], [hidden] */
    double *group_ub;      /* [head groups] head_argmax's scratch */
    int32_t *group_order;
    uint32_t *ubits;       /* [units / 32 + 1]: units to evaluate (all 0 between layers) */
    int32_t *cols;         /* [hidden + channels + y rows]: a row's live entries */
    float *vals;
    int32_t *nq, *nk;      /* [N] per position: nonzero q / k entries of a key head */
    int32_t *nzq, *nzk;    /* [N][dk] their indices */
    float *qn, *kn;        /* [N][dk] the normalized values at those indices */
} Batch;

static void *bzalloc(size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return NULL;
    memset(p, 0, bytes);
    return p;
}

/* out[t] = pairwise_sumsq of column t of rows [a, a + len) (rows of N floats), t < n:
   pairwise_sumsq's recursion, each scalar a row of positions. Rows whose nz flag is 0
   (all +0) are skipped: their terms are +0, and an accumulator of squares (>= +0) plus
   +0 is itself, so every partial sum is the same. */
static void pw_rows(const float *X, const uint8_t *nz, int64_t N, int32_t n, int64_t a,
                    int64_t len, float *out, float *acc, float *stack) {
    if (len < 8) {
        for (int32_t t = 0; t < n; t++) out[t] = 0.0f;
        for (int64_t i = 0; i < len; i++) {
            if (!nz[a + i]) continue;
            const float *x = X + (a + i) * N;
            for (int32_t t = 0; t < n; t++) out[t] += x[t] * x[t];
        }
        return;
    }
    if (len <= 128) {
        for (int32_t j = 0; j < 8; j++) {
            const float *x = X + (a + j) * N;
            float *r = acc + j * N;
            if (!nz[a + j]) { for (int32_t t = 0; t < n; t++) r[t] = 0.0f; continue; }
            for (int32_t t = 0; t < n; t++) r[t] = x[t] * x[t];
        }
        int64_t i;
        for (i = 8; i < len - (len % 8); i += 8)
            for (int32_t j = 0; j < 8; j++) {
                if (!nz[a + i + j]) continue;
                const float *x = X + (a + i + j) * N;
                float *r = acc + j * N;
                for (int32_t t = 0; t < n; t++) r[t] += x[t] * x[t];
            }
        const float *r0 = acc, *r1 = acc + N, *r2 = acc + 2 * N, *r3 = acc + 3 * N,
                    *r4 = acc + 4 * N, *r5 = acc + 5 * N, *r6 = acc + 6 * N, *r7 = acc + 7 * N;
        for (int32_t t = 0; t < n; t++)
            out[t] = ((r0[t] + r1[t]) + (r2[t] + r3[t])) + ((r4[t] + r5[t]) + (r6[t] + r7[t]));
        for (; i < len; i++) {
            if (!nz[a + i]) continue;
            const float *x = X + (a + i) * N;
            for (int32_t t = 0; t < n; t++) out[t] += x[t] * x[t];
        }
        return;
    }
    int64_t n2 = len / 2;
    n2 -= n2 % 8;
    pw_rows(X, nz, N, n, a, n2, out, acc, stack + N);
    pw_rows(X, nz, N, n, a + n2, len - n2, stack, acc, stack + N);
    for (int32_t t = 0; t < n; t++) out[t] = out[t] + stack[t];
}

/* b->r[t]: norm_scale of position t of the residual stream */
static void batch_norm_scale(const Model *m, Batch *b) {
    const int32_t n = b->n;
    pw_rows(b->HT, b->hnz, b->N, n, 0, m->hidden, b->r, b->pw, b->pw + 8 * b->N);
    for (int32_t t = 0; t < n; t++) b->r[t] = 1.0f / sqrtf(b->r[t] / (float)m->hidden + m->eps);
}

/* rows `cols` of XF: (h * r) * w, as normalize() computes them; xnz flags nonzero rows */
static void batch_fill(const Model *m, Batch *b, const float *w, const int32_t *cols,
                       int32_t nc) {
    const int32_t n = b->n, N = b->N;
    for (int32_t j = 0; j < nc; j++) {
        const int32_t c = cols[j];
        if (!b->hnz[c]) { b->xnz[c] = 0; continue; }  /* (+-0 * r) * w is +-0 */
        const float *h = b->HT + (int64_t)c * N, *r = b->r;
        float *x = b->XF + (int64_t)c * N;
        const float wc = w[c];
        int32_t any = 0;
        for (int32_t t = 0; t < n; t++) {
            const float v = (h[t] * r[t]) * wc;
            x[t] = v;
            any |= v != 0.0f;
        }
        b->xnz[c] = (uint8_t)any;
    }
}

#define TILE 16  /* positions per register tile */

/* out rows = the product over the positions, row by row: each row's terms in its order
   (inputs whose row of X is all +-0 skipped: their terms are +-0), 16 positions in
   registers at a time; xnz[c] marks the rows of X that hold a nonzero; touched: the
   rows written (the others are all +0) */
static void rows_batch(const BatchRows *a, const float *X, const uint8_t *xnz,
                       float *out, uint8_t *touched, int32_t n,
                       int32_t N, int32_t *cols, float *vals) {
    for (int32_t i = 0; i < a->n_rows; i++) {
        int32_t k = 0;
        for (int32_t p = a->ptr[i]; p < a->ptr[i + 1]; p++) {
            const int32_t c = a->col[p];
            if (!xnz[c]) continue;
            cols[k] = c;
            vals[k++] = a->val[p];
        }
        const int32_t r = a->row[i];
        if (!k) continue;
        touched[r] = 1;
        float *o = out + (int64_t)r * N;
        int32_t t0 = 0;
#ifdef __AVX512F__
        for (; t0 + 4 * TILE <= n; t0 += 4 * TILE) {  /* 4 tiles: independent chains */
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (int32_t j = 0; j < k; j++) {
                const __m512 v = _mm512_set1_ps(vals[j]);
                const float *x = X + (int64_t)cols[j] * N + t0;
                a0 = _mm512_add_ps(a0, _mm512_mul_ps(v, _mm512_loadu_ps(x)));
                a1 = _mm512_add_ps(a1, _mm512_mul_ps(v, _mm512_loadu_ps(x + 16)));
                a2 = _mm512_add_ps(a2, _mm512_mul_ps(v, _mm512_loadu_ps(x + 32)));
                a3 = _mm512_add_ps(a3, _mm512_mul_ps(v, _mm512_loadu_ps(x + 48)));
            }
            _mm512_storeu_ps(o + t0, a0);
            _mm512_storeu_ps(o + t0 + 16, a1);
            _mm512_storeu_ps(o + t0 + 32, a2);
            _mm512_storeu_ps(o + t0 + 48, a3);
        }
        for (; t0 < n; t0 += TILE) {
            __m512 a0 = _mm512_setzero_ps();
            for (int32_t j = 0; j < k; j++)
                a0 = _mm512_add_ps(a0, _mm512_mul_ps(
                _mm512_set1_ps(vals[j]), _mm512_loadu_ps(X + (int64_t)cols[j] * N + t0)));
            _mm512_storeu_ps(o + t0, a0);
        }
#elif defined(__AVX2__)
        for (; t0 < n; t0 += TILE) {
            __m256 a0 = _mm256_setzero_ps(), a1 = a0;
            for (int32_t j = 0; j < k; j++) {
                const __m256 v = _mm256_set1_ps(vals[j]);
                const float *x = X + (int64_t)cols[j] * N + t0;
                a0 = _mm256_add_ps(a0, _mm256_mul_ps(v, _mm256_loadu_ps(x)));
                a1 = _mm256_add_ps(a1, _mm256_mul_ps(v, _mm256_loadu_ps(x + 8)));
            }
            _mm256_storeu_ps(o + t0, a0);
            _mm256_storeu_ps(o + t0 + 8, a1);
        }
#endif
        for (; t0 < n; t0 += TILE) {  /* no vector unit: the same operations */
            float acc[TILE];
            for (int32_t l = 0; l < TILE; l++) acc[l] = 0.0f;
            for (int32_t j = 0; j < k; j++) {
                const float v = vals[j], *x = X + (int64_t)cols[j] * N + t0;
                for (int32_t l = 0; l < TILE; l++) acc[l] += v * x[l];
            }
            for (int32_t l = 0; l < TILE; l++) o[t0 + l] = acc[l];
        }
    }
}

/* the same product by columns (the per-token kernel's arrays: columns ascending, each
   scattered over its rows): cheaper when few inputs are live or the positions few */
static void csc_batch(const Csc *a, const float *X, const uint8_t *xnz, float *out,
                      uint8_t *touched, int32_t n, int32_t N) {
    for (int32_t c = 0; c < a->n_cols; c++) {
        const int32_t x = a->col[c];
        if (!xnz[x]) continue;
        const float *xv = X + (int64_t)x * N;
        for (int32_t p = a->ptr[c]; p < a->ptr[c + 1]; p++) {
            const int32_t r = a->row[p];
            float *o = out + (int64_t)r * N;
            const float v = a->val[p];
            if (!touched[r]) {
                touched[r] = 1;
                for (int32_t t = 0; t < n; t++) o[t] = 0.0f + v * xv[t];
            } else {
                for (int32_t t = 0; t < n; t++) o[t] += v * xv[t];
            }
        }
    }
}

/* live entries of column-sparse products (inputs live in xnz) */
static int64_t csc_live(const Csc *a, const uint8_t *xnz) {
    int64_t live = 0;
    for (int32_t c = 0; c < a->n_cols; c++) {
        if (xnz[a->col[c]]) live += a->ptr[c + 1] - a->ptr[c];
    }
    return live;
}

/* out = the product of rows `r` (or, the same sums, of columns a [and a2]): by columns
   when the positions are few or under a quarter of the entries are live */
static void product(const BatchRows *r, const Csc *a, const Csc *a2, const float *X,
                    const uint8_t *xnz, float *out, uint8_t *touched, Batch *b) {
    const int64_t total = r->ptr[r->n_rows];
    const int64_t live = csc_live(a, xnz) + (a2 ? csc_live(a2, xnz) : 0);
    if (b->n <= 32 || 4 * live < total) {
        csc_batch(a, X, xnz, out, touched, b->n, b->N);
        if (a2) csc_batch(a2, X, xnz, out, touched, b->n, b->N);
    } else {
        rows_batch(r, X, xnz, out, touched, b->n, b->N, b->cols, b->vals);
    }
}

/* HT rows `rows` += MX rows (untouched: + 0.0f), at every position or where mask[t] */
static void batch_add(Batch *b, const int32_t *rows, int32_t nr, const int32_t *mask) {
    const int32_t n = b->n, N = b->N;
    for (int32_t k = 0; k < nr; k++) {
        const int32_t r = rows[k];
        float *h = b->HT + (int64_t)r * N;
        const float *d = b->MX + (int64_t)r * N;
        if (!b->mxt[r] && !b->hnz[r]) continue;  /* +0 + +0: nothing changes */
        b->hnz[r] |= b->mxt[r];  /* may be nonzero now */
        if (!mask) {
            if (b->mxt[r]) for (int32_t t = 0; t < n; t++) h[t] += d[t];
            else for (int32_t t = 0; t < n; t++) h[t] += 0.0f;
        } else {
            for (int32_t t = 0; t < n; t++)
                if (mask[t]) h[t] += b->mxt[r] ? d[t] : 0.0f;
        }
    }
}

/* dst[c * ds + r] = src[r * ss + c] for r < R, c < C (8x8 blocks in registers) */
static void transpose(const float *src, int64_t ss, float *dst, int64_t ds, int32_t R,
                      int32_t C) {
    int32_t r0 = 0;
#ifdef __AVX2__
    for (; r0 + 8 <= R; r0 += 8) {
        int32_t c0 = 0;
        for (; c0 + 8 <= C; c0 += 8) {
            const float *s0 = src + (int64_t)r0 * ss + c0;
            __m256 a0 = _mm256_loadu_ps(s0), a1 = _mm256_loadu_ps(s0 + ss),
                   a2 = _mm256_loadu_ps(s0 + 2 * ss), a3 = _mm256_loadu_ps(s0 + 3 * ss),
                   a4 = _mm256_loadu_ps(s0 + 4 * ss), a5 = _mm256_loadu_ps(s0 + 5 * ss),
                   a6 = _mm256_loadu_ps(s0 + 6 * ss), a7 = _mm256_loadu_ps(s0 + 7 * ss);
            __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1),
                   t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3),
                   t4 = _mm256_unpacklo_ps(a4, a5), t5 = _mm256_unpackhi_ps(a4, a5),
                   t6 = _mm256_unpacklo_ps(a6, a7), t7 = _mm256_unpackhi_ps(a6, a7);
            __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
                   u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
                   u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
                   u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *d0 = dst + (int64_t)c0 * ds + r0;
            _mm256_storeu_ps(d0, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_storeu_ps(d0 + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_storeu_ps(d0 + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_storeu_ps(d0 + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_storeu_ps(d0 + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_storeu_ps(d0 + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_storeu_ps(d0 + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_storeu_ps(d0 + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
        for (; c0 < C; c0++)
            for (int32_t r = r0; r < r0 + 8; r++)
                dst[(int64_t)c0 * ds + r] = src[(int64_t)r * ss + c0];
    }
#endif
    for (; r0 < R; r0++)
        for (int32_t c = 0; c < C; c++) dst[(int64_t)c * ds + r0] = src[(int64_t)r0 * ss + c];
}

static void clear_flags(uint8_t *flags, int32_t n) { memset(flags, 0, (size_t)n); }

static inline float st_at(const Batch *b, int32_t row, int32_t t) {
    return b->stt[row] ? b->ST[(int64_t)row * b->N + t] : 0.0f;
}

/* the max of x[0..n) (+inf when one is NaN); row_max_neg: the max of -x */
static float row_max_sign(const float *x, int32_t n, float sign) {
    int32_t t = 0, nan = 0;
    float mx = -INFINITY;
#ifdef __AVX2__
    __m256 vmax = _mm256_set1_ps(-INFINITY), vnan = _mm256_setzero_ps();
    const __m256 vs = _mm256_set1_ps(sign);
    for (; t + 8 <= n; t += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + t), vs);
        vnan = _mm256_or_ps(vnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        vmax = _mm256_max_ps(vmax, v);
    }
    nan = _mm256_movemask_ps(vnan) != 0;
    float lanes[8];
    _mm256_storeu_ps(lanes, vmax);
    for (int32_t j = 0; j < 8; j++) mx = lanes[j] > mx ? lanes[j] : mx;
#endif
    for (; t < n; t++) {
        const float v = x[t] * sign;
        nan |= v != v;
        mx = v > mx ? v : mx;
    }
    return nan ? INFINITY : mx;
}

static float row_max(const float *x, int32_t n) { return row_max_sign(x, n, 1.0f); }
static float row_max_neg(const float *x, int32_t n) { return row_max_sign(x, n, -1.0f); }

static void batch_free(Batch *b) {
    void *all[] = {b->HT, b->hnz, b->XF, b->xnz, b->MX, b->mxt, b->ST, b->stt, b->CT,
                   b->cact, b->wflag, b->Y, b->yt, b->r, b->row, b->row2, b->pw,
                   b->any_out, b->tmp, b->ynz, b->ubits, b->hmask, b->vt,
                   b->ot, b->o, b->head_x, b->group_ub, b->group_order, b->cols, b->vals,
                   b->nq, b->nk, b->nzq, b->nzk, b->qn, b->kn};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) free(all[k]);
    memset(b, 0, sizeof *b);
}

/* sizes (BATCH_SIZES): hidden, row stride N, rows (slots, forms), channels, y rows
   (heads * dv, at least 1), dk, dv, head groups, units; 0 when done, -1 when out of
   memory */
#define BATCH_SIZES 9
static int batch_alloc(Batch *b, const int64_t *sizes) {
    const int64_t H = sizes[0], N = sizes[1], rows = sizes[2], chans = sizes[3],
                  yrows = sizes[4], dk = sizes[5], dv = sizes[6];
    memset(b, 0, sizeof *b);
    b->N = (int32_t)N;
    b->chans = chans;
    b->HT = bzalloc(sizeof(float) * H * N);
    b->XF = bzalloc(sizeof(float) * H * N);
    b->MX = bzalloc(sizeof(float) * H * N);
    b->ST = bzalloc(sizeof(float) * rows * N);
    b->CT = bzalloc(sizeof(float) * chans * N);
    b->Y = bzalloc(sizeof(float) * yrows * N);
    b->hnz = bzalloc(H); b->xnz = bzalloc(H); b->mxt = bzalloc(H); b->stt = bzalloc(rows);
    b->cact = bzalloc(chans); b->yt = bzalloc(yrows); b->wflag = bzalloc(chans);
    b->r = bzalloc(sizeof(float) * N);
    b->row = bzalloc(sizeof(float) * N);
    b->row2 = bzalloc(sizeof(float) * (N + 64));
    b->pw = bzalloc(sizeof(float) * N * 48);
    b->any_out = bzalloc(sizeof(int32_t) * N);
    b->tmp = bzalloc(sizeof(float) * (dk + 2 * dv));
    b->nq = bzalloc(sizeof(int32_t) * N); b->nk = bzalloc(sizeof(int32_t) * N);
    b->nzq = bzalloc(sizeof(int32_t) * N * dk); b->nzk = bzalloc(sizeof(int32_t) * N * dk);
    b->qn = bzalloc(sizeof(float) * N * dk); b->kn = bzalloc(sizeof(float) * N * dk);
    b->ubits = bzalloc(sizeof(uint32_t) * (sizes[8] / 32 + 1));
    b->ynz = bzalloc(yrows);
    b->cols = bzalloc(sizeof(int32_t) * (H + chans + yrows));
    b->hmask = bzalloc(sizeof(int32_t) * N);
    b->vt = bzalloc(sizeof(float) * N * dv); b->ot = bzalloc(sizeof(float) * N * dv);
    b->o = bzalloc(sizeof(float) * dv); b->head_x = bzalloc(sizeof(float) * H);
    b->group_ub = bzalloc(sizeof(double) * (sizes[7] + 1));
    b->group_order = bzalloc(sizeof(int32_t) * (sizes[7] + 1));
    b->vals = bzalloc(sizeof(float) * (H + chans + yrows));
    const void *all[] = {b->HT, b->hnz, b->XF, b->xnz, b->MX, b->mxt, b->ST, b->stt, b->CT,
                         b->cact, b->wflag, b->Y, b->yt, b->r, b->row, b->row2,
                         b->pw, b->any_out, b->tmp, b->ynz, b->ubits,
                         b->hmask, b->vt, b->ot, b->o, b->head_x, b->group_ub,
                         b->group_order, b->cols, b->vals, b->nq, b->nk, b->nzq, b->nzk,
                         b->qn, b->kn};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
        if (!all[k]) return -1;
    return 0;
}
