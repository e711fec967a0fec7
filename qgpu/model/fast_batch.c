/* qgpu batched teacher forcing (included by fast_kernel.c): n known tokens through the
 * model layer by layer, every product over all n positions at once, bit-identical to
 * running the tokens one by one through qgpu_forward.
 *
 * Why the results are the same bits: every value is computed by the same float32
 * operations in the same order as the per-token kernel computes it, position by
 * position; what changes is which operations run side by side.
 * - The residual stream is kept position-minor (HT[feature][position]): a norm's
 *   pairwise sum of squares runs the per-token recursion with each accumulator a row of
 *   positions (pw_rows), and the normalized inputs are (h * r) * w as normalize() does.
 * - A sparse product (rows_batch) sums, for each output row, weight * x over the
 *   positions with the row's terms in the per-token order (ascending input index: the
 *   per-token kernel's column order). The per-token kernel skips the positions where x
 *   is +-0; the batch adds their terms, which are +-0 (weights are finite: fast_plan
 *   checks, else the per-token kernel runs), and adding +-0 to an accumulator that
 *   starts at +0 leaves it unchanged (an accumulator started at +0 is never -0: x + (-x)
 *   rounds to +0). So each output receives the same nonzero terms in the same order.
 *   The same holds for the MLP's down product (units in ascending order, which is the
 *   per-token order for any thread count) and out_proj.
 * - The causal conv of a channel over the positions reads the window [state, inputs]
 *   and shifts it once per token; the per-token kernel shifts only channels whose window
 *   or input is nonzero, but a channel it leaves alone holds only +0 (conv inputs are
 *   sums started at +0), so shifting it changes nothing.
 * - The delta rule, the norms of q and k and the gated output norm run position by
 *   position (the recurrence is sequential), with the per-token kernel's code.
 * - Adds into the residual stream touch the same rows as the per-token kernel (all the
 *   down rows after an MLP, the out rows after a mixer whose heads read anything), so a
 *   -0 turns into +0 exactly where it does token by token.
 * tests/model/test_fast_batch.py checks greedy tokens, logits and states against the
 * per-token kernel on random models whose sums are not exact, and on the machine.
 */
#include <stdlib.h>

/* a product's rows (mirrored by fast_native.BatchRows): output row ids, and per row its
   entries in ascending input order (the per-token kernel's order of terms) */
typedef struct {
    int32_t n_rows;
    const int32_t *row, *ptr, *col;
    const float *val;
} BatchRows;

/* per layer, what the batched kernel reads besides the Layer (fast_native.BatchLayer):
   proj (input: hidden), gate forms (input: hidden), down (input: units), out (input: y
   slots) by rows; the hidden columns the MLP reads (gate forms, up rows, bias column) */
typedef struct {
    BatchRows proj, gate, down, out;
    int32_t n_xcols;
    const int32_t *xcols;
} BatchLayer;

const char *qgpu_batch_layout(void) {
    static char buf[2048];
    if (buf[0]) return buf;
    size_t n = 0;
#define PUT_S(T) n += (size_t)snprintf(buf + n, sizeof buf - n, SZ(T), sizeof(T))
#define PUT(T, f) n += (size_t)snprintf(buf + n, sizeof buf - n, OF(T, f), offsetof(T, f))
    PUT_S(BatchRows); PUT(BatchRows, n_rows); PUT(BatchRows, row); PUT(BatchRows, ptr);
    PUT(BatchRows, col); PUT(BatchRows, val);
    PUT_S(BatchLayer); PUT(BatchLayer, proj); PUT(BatchLayer, gate); PUT(BatchLayer, down);
    PUT(BatchLayer, out); PUT(BatchLayer, n_xcols); PUT(BatchLayer, xcols);
#undef PUT
#undef PUT_S
    return buf;
}

typedef struct {
    int32_t n, N;          /* positions, row stride (>= n, a multiple of 8) */
    float *HT;             /* [hidden][N] residual stream */
    uint8_t *hnz;          /* [hidden] row of HT may hold a value other than +0 */
    float *XF;             /* [hidden][N] a norm's output, rows of the columns read */
    uint8_t *xnz;          /* [hidden] row of XF holds a nonzero */
    float *MX;             /* [hidden][N] a product into the residual stream */
    uint8_t *mxt;          /* [hidden] row of MX touched (zeroed and written) */
    float *ST;             /* [max slots or forms][N] projections / gate forms */
    uint8_t *stt;          /* row of ST touched */
    float *CT;             /* [max channels][N] conv outputs */
    uint8_t *cact;         /* channel active (row of CT written) */
    uint8_t *wflag;        /* [channels] in the window list (all 0 between layers) */
    float *Y;              /* [max heads * dv or units][N] gated outputs / acts */
    uint8_t *yt;           /* row of Y touched */
    int32_t *list;         /* scratch list */
    float *r, *row, *row2, *pw;  /* [N] each; pw: pairwise scratch */
    float *fmax;           /* per gate form: max over positions */
    int32_t *any_out;      /* [N] */
    float *tmp;            /* [dk + 2 dv] dense head vector, v, z */
    uint8_t *ynz, *ones;   /* [y rows]: row of Y holds a nonzero; all 1 */
    int32_t *hmask;        /* [N]: the head read at this position */
    float *vt, *ot;        /* [N][dv]: a head's v and o * r, by position */
    float *o, *head_x;     /* [dv], [hidden] */
    double *group_ub;      /* [head groups] head_argmax's scratch */
    int32_t *group_order;
    int32_t *umap;         /* [units]: row of Y holding a unit's acts, or -1 */
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
__attribute__((noinline)) static void batch_fill(const Model *m, Batch *b, const float *w, const int32_t *cols,
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
   registers at a time; used[c] (or NULL: every input) marks the inputs X has; touched:
   the rows written (the others are all +0) */
static void rows_batch(const BatchRows *a, const float *X, const uint8_t *xnz,
                       const int32_t *xrow, float *out, uint8_t *touched, int32_t n,
                       int32_t N, int32_t *cols, float *vals) {
    for (int32_t i = 0; i < a->n_rows; i++) {
        int32_t k = 0;
        for (int32_t p = a->ptr[i]; p < a->ptr[i + 1]; p++) {
            const int32_t c = a->col[p];
            const int32_t x = xrow ? xrow[c] : c;
            if (x < 0 || !xnz[x]) continue;
            cols[k] = x;
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
                a0 = _mm512_add_ps(a0, _mm512_mul_ps(_mm512_set1_ps(vals[j]),
                                                     _mm512_loadu_ps(X + (int64_t)cols[j] * N + t0)));
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
static void csc_batch(const Csc *a, const float *X, const uint8_t *xnz, const int32_t *xrow,
                      float *out, uint8_t *touched, int32_t n, int32_t N) {
    for (int32_t c = 0; c < a->n_cols; c++) {
        const int32_t x = xrow ? xrow[a->col[c]] : a->col[c];
        if (x < 0 || !xnz[x]) continue;
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

/* live entries of column-sparse products (inputs live in xnz, through xrow) */
static int64_t csc_live(const Csc *a, const uint8_t *xnz, const int32_t *xrow) {
    int64_t live = 0;
    for (int32_t c = 0; c < a->n_cols; c++) {
        const int32_t x = xrow ? xrow[a->col[c]] : a->col[c];
        if (x >= 0 && xnz[x]) live += a->ptr[c + 1] - a->ptr[c];
    }
    return live;
}

/* out = the product of rows `r` (or, the same sums, of columns a [and a2]): by columns
   when the positions are few or under a quarter of the entries are live */
static void product(const BatchRows *r, const Csc *a, const Csc *a2, const float *X,
                    const uint8_t *xnz, const int32_t *xrow, float *out, uint8_t *touched,
                    Batch *b) {
    const int64_t total = r->ptr[r->n_rows];
    int64_t live = csc_live(a, xnz, xrow) + (a2 ? csc_live(a2, xnz, xrow) : 0);
    if (b->n <= 32 || 4 * live < total) {
        csc_batch(a, X, xnz, xrow, out, touched, b->n, b->N);
        if (a2) csc_batch(a2, X, xnz, xrow, out, touched, b->n, b->N);
    } else {
        rows_batch(r, X, xnz, xrow, out, touched, b->n, b->N, b->cols, b->vals);
    }
}

/* HT rows `rows` += MX rows (untouched: + 0.0f), at every position or where mask[t] */
__attribute__((noinline)) static void batch_add(Batch *b, const int32_t *rows, int32_t nr, const int32_t *mask) {
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
            for (int32_t r = r0; r < r0 + 8; r++) dst[(int64_t)c0 * ds + r] = src[(int64_t)r * ss + c0];
    }
#endif
    for (; r0 < R; r0++)
        for (int32_t c = 0; c < C; c++) dst[(int64_t)c * ds + r0] = src[(int64_t)r0 * ss + c];
}

static void clear_flags(uint8_t *flags, int32_t n) { memset(flags, 0, (size_t)n); }

static inline float st_at(const Batch *b, int32_t row, int32_t t) {
    return b->stt[row] ? b->ST[(int64_t)row * b->N + t] : 0.0f;
}

__attribute__((noinline)) static void batch_gdn(const Model *m, const Layer *L, const BatchLayer *bl, Batch *b,
                      float *S_all, float *conv, int32_t *win, int32_t *n_win) {
    const int32_t dk = m->dk, dv = m->dv, K = m->conv_k, nh = L->n_heads, nkh = L->n_key_heads;
    const int32_t n_qk = nkh * dk, n_ch = 2 * n_qk + nh * dv, n = b->n, N = b->N;
    batch_norm_scale(m, b);
    batch_fill(m, b, L->in_norm, L->proj.col, L->proj.n_cols);
    clear_flags(b->stt, L->n_slots);
    product(&bl->proj, &L->proj, NULL, b->XF, b->xnz, NULL, b->ST, b->stt, b);
    /* the causal conv, channel by channel over the positions */
    int32_t kept = 0;
    float *seq = b->row2;  /* the window then the first inputs */
    for (int32_t k = 0; k < *n_win; k++) b->wflag[win[k]] = 1;  /* state not all 0 */
    for (int32_t c = 0; c < n_ch; c++) {
        float *st = conv + (int64_t)c * K;
        if (!b->wflag[c] && !b->stt[c]) {
            b->cact[c] = 0;
            if (c >= 2 * n_qk) memset(b->CT + (int64_t)c * N, 0, sizeof(float) * n);  /* v */
            continue;
        }
        b->wflag[c] = 0;
        int32_t any = 0;
        for (int32_t j = 0; j < K; j++) any |= st[j] != 0.0f;
        const float *in = b->ST + (int64_t)c * N;
        if (!any) {
            int32_t nz = 0;
            for (int32_t t = 0; t < n; t++) nz |= in[t] != 0.0f;
            if (!nz) {
                b->cact[c] = 0;
                if (c >= 2 * n_qk) memset(b->CT + (int64_t)c * N, 0, sizeof(float) * n);
                continue;
            }
        }
        b->cact[c] = 1;
        const float *w = L->conv_w + (int64_t)c * K;
        /* out[t] reads seq[t .. t + K) of seq = [state[1..K), inputs]: the first K - 1
           positions from a short copy, the others from the inputs in place */
        const int32_t head = n < K - 1 ? n : K - 1;
        for (int32_t j = 0; j < K - 1; j++) seq[j] = st[j + 1];
        for (int32_t j = 0; j < head; j++) seq[K - 1 + j] = b->stt[c] ? in[j] : 0.0f;
        float *out = b->CT + (int64_t)c * N;
        for (int32_t t = 0; t < head; t++) {
            float acc = 0.0f;
            for (int32_t j = 0; j < K; j++) acc += w[j] * seq[t + j];
            out[t] = acc;
        }
        if (!b->stt[c]) {  /* no input: 0 + w * 0 ... = +0 */
            for (int32_t t = head; t < n; t++) out[t] = 0.0f;
        } else if (K == 4) {
            const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
            const float *x = in - 3;  /* x[t + j] = in[t + j - 3] */
            for (int32_t t = head; t < n; t++) {
                float acc = 0.0f;
                acc += w0 * x[t];
                acc += w1 * x[t + 1];
                acc += w2 * x[t + 2];
                acc += w3 * x[t + 3];
                out[t] = acc;
            }
        } else {
            for (int32_t t = head; t < n; t++) {
                float acc = 0.0f;
                for (int32_t j = 0; j < K; j++) acc += w[j] * in[t + j - (K - 1)];
                out[t] = acc;
            }
        }
        /* the window after the last token: [state, inputs][n .. n + K) */
        float last[64];
        for (int32_t j = 0; j < K; j++)
            last[j] = n + j < K ? st[n + j] : b->stt[c] ? in[n + j - K] : 0.0f;
        int32_t nz = 0;
        for (int32_t j = 0; j < K; j++) { st[j] = last[j]; nz |= last[j] != 0.0f; }
        win[kept] = c;
        kept += nz;
        silu_array(out, n);
    }
    *n_win = kept;
    /* head by head (heads are independent: each has its own state), position by
       position within a head: q/k lists and norms of its key head, the delta rule, the
       gated output norm -- the per-token kernel's operations on each head */
    const int32_t z0 = n_ch, b0 = n_ch + nh * dv, a0 = b0 + nh;
    clear_flags(b->yt, nh * dv);
    for (int32_t t = 0; t < n; t++) b->any_out[t] = 0;
    for (int32_t kh = 0; kh < nkh; kh++) {
        int32_t has_head = 0;
        for (int32_t s = 0; s < nh; s++) has_head |= L->key_slot[s] == kh;
        if (!has_head) continue;
        for (int32_t half = 0; half < 2; half++) {  /* q, then k: lists per position */
            int32_t *cnt = half ? b->nk : b->nq, *nz = half ? b->nzk : b->nzq;
            float *norm = half ? b->kn : b->qn;
            const int32_t base = half ? n_qk + kh * dk : kh * dk;
            for (int32_t t = 0; t < n; t++) cnt[t] = 0;
            for (int32_t j = 0; j < dk; j++) {
                if (!b->cact[base + j]) continue;
                const float *row = b->CT + (int64_t)(base + j) * N;
                int32_t t = 0;
#ifdef __AVX512F__
                for (; t + 16 <= n; t += 16) {  /* the nonzero positions by mask */
                    __mmask16 mk = _mm512_cmp_ps_mask(_mm512_loadu_ps(row + t),
                                                      _mm512_setzero_ps(), _CMP_NEQ_UQ);
                    while (mk) {
                        const int32_t tt = t + __builtin_ctz(mk);
                        mk &= mk - 1;
                        nz[(int64_t)tt * dk + cnt[tt]++] = j;
                    }
                }
#endif
                for (; t < n; t++) {  /* branch-free append */
                    nz[(int64_t)t * dk + cnt[t]] = j;
                    cnt[t] += row[t] != 0.0f;
                }
            }
            for (int32_t t = 0; t < n; t++) {
                const int32_t k = cnt[t], *z = nz + (int64_t)t * dk;
                if (!k) continue;
                for (int32_t i = 0; i < k; i++)
                    b->tmp[z[i]] = b->CT[(int64_t)(base + z[i]) * N + t];
                l2norm_head(b->tmp, dk, half ? 1.0f : m->sqrt_dk, norm + (int64_t)t * dk, z, k);
                for (int32_t i = 0; i < k; i++) b->tmp[z[i]] = 0.0f;
            }
        }
        int32_t writes = 0;  /* some position writes (k nonzero) */
        for (int32_t t = 0; t < n; t++) writes |= b->nk[t];
        for (int32_t s = 0; s < nh; s++) {
            if (L->key_slot[s] != kh) continue;
            float *S = S_all + (int64_t)L->head_ids[s] * dk * dv;
            int32_t read = 0;  /* the head read at some position */
            for (int32_t t = 0; t < n; t++) b->hmask[t] = 0;
            float *VT = b->vt, *OT = b->ot;  /* [N][dv]: v and o * r by position */
            if (writes)  /* v by position (rows of inactive channels hold +0) */
                transpose(b->CT + (int64_t)(2 * n_qk + s * dv) * N, N, VT, dv, dv, n);
            for (int32_t t = 0; t < n; t++) {
                float a_in = st_at(b, a0 + s, t) + L->dt_bias[s];
                float decay = np_expf(L->neg_exp_a_log[s] * softplus(a_in));
                if (decay != 1.0f) for (int64_t i = 0; i < (int64_t)dk * dv; i++) S[i] *= decay;
                const int32_t nk = b->nk[t], *nzk = b->nzk + (int64_t)t * dk;
                const float *kn = b->kn + (int64_t)t * dk;
                if (nk) {  /* delta rule: m = S^T k; S += k (beta (v - m))^T */
                    const float *vloc = VT + (int64_t)t * dv;
                    float beta = sigmoid(st_at(b, b0 + s, t));
                    float *delta = b->o;
                    for (int32_t e = 0; e < dv; e++) delta[e] = 0.0f;
                    for (int32_t k = 0; k < nk; k++) {
                        const float *row = S + (int64_t)nzk[k] * dv;
                        float kj = kn[nzk[k]];
                        for (int32_t e = 0; e < dv; e++) delta[e] += row[e] * kj;
                    }
                    for (int32_t e = 0; e < dv; e++) delta[e] = (vloc[e] - delta[e]) * beta;
                    for (int32_t k = 0; k < nk; k++) {
                        float *row = S + (int64_t)nzk[k] * dv;
                        float kj = kn[nzk[k]];
                        for (int32_t e = 0; e < dv; e++) row[e] += kj * delta[e];
                    }
                }
                const int32_t nq = b->nq[t], *nzq = b->nzq + (int64_t)t * dk;
                if (!nq) continue;  /* reads 0: the head's output is 0 */
                const float *qn = b->qn + (int64_t)t * dk;
                float *o = b->o;
                for (int32_t e = 0; e < dv; e++) o[e] = 0.0f;
                for (int32_t k = 0; k < nq; k++) {
                    const float *row = S + (int64_t)nzq[k] * dv;
                    float qj = qn[nzq[k]];
                    for (int32_t e = 0; e < dv; e++) o[e] += row[e] * qj;
                }
                float r = 1.0f / sqrtf(pairwise_sumsq(o, dv) / (float)dv + m->eps);
                read = 1;
                for (int32_t e = 0; e < dv; e++) OT[(int64_t)t * dv + e] = o[e] * r;
                b->hmask[t] = 1;
                b->any_out[t] = 1;
            }
            if (!read) continue;
            /* y = (norm_w * (o r)) * silu(z) row by row, where the head read (+0 elsewhere) */
            transpose(OT, dv, b->Y + (int64_t)s * dv * N, N, n, dv);  /* o r by feature */
            float *zs = b->row2;
            for (int32_t e = 0; e < dv; e++) {
                b->yt[s * dv + e] = 1;
                const int32_t zr = z0 + s * dv + e;
                if (b->stt[zr]) memcpy(zs, b->ST + (int64_t)zr * N, sizeof(float) * n);
                else memset(zs, 0, sizeof(float) * n);
                silu_array(zs, n);
                float *y = b->Y + (int64_t)(s * dv + e) * N;
                const float w = L->norm_w[e];
                for (int32_t t = 0; t < n; t++) y[t] = b->hmask[t] ? (w * y[t]) * zs[t] : 0.0f;
            }
        }
    }
    /* out_proj over the positions, then the residual where some head read */
    int32_t some = 0;
    for (int32_t t = 0; t < n; t++) some |= b->any_out[t];
    if (!some) return;
    for (int32_t c = 0; c < nh * dv; c++) {
        uint8_t any = 0;
        if (b->yt[c]) {
            const float *y = b->Y + (int64_t)c * N;
            for (int32_t t = 0; t < n; t++) any |= y[t] != 0.0f;
        }
        b->ynz[c] = any;
    }
    clear_flags(b->mxt, m->hidden);
    product(&bl->out, &L->out, NULL, b->Y, b->ynz, NULL, b->MX, b->mxt, b);
    batch_add(b, L->out_rows, L->n_out_rows, b->any_out);
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

/* the MLP over the positions: gate forms, units (skipped where a bound shows silu(gate)
   is 0 at every position), acts, down */
__attribute__((noinline)) static void batch_mlp(const Model *m, const Layer *L, const BatchLayer *bl, Batch *b) {
    const int32_t n = b->n, N = b->N, nu = L->n_units;
    batch_norm_scale(m, b);
    batch_fill(m, b, L->post_norm, bl->xcols, bl->n_xcols);
    clear_flags(b->stt, L->n_forms);
    product(&bl->gate, &L->gate, &L->gate_hi, b->XF, b->xnz, NULL, b->ST, b->stt, b);
    float *zero = b->row;
    memset(zero, 0, sizeof(float) * N);
    for (int32_t f = 0; f < L->n_forms; f++) {
        b->fmax[f] = b->stt[f] ? row_max(b->ST + (int64_t)f * N, n) : 0.0f;
    }
    const float *bias = L->bias_col >= 0 && b->xnz[L->bias_col]
                        ? b->XF + (int64_t)L->bias_col * N : zero;
    float bmax = row_max(bias, n), bmin = -row_max_neg(bias, n);
    int32_t na = 0;
    float *g = b->row2, *up = b->pw;
    for (int32_t u = 0; u < nu; u++) {
        const int32_t form = L->unit_form[u];
        const float ub = L->unit_bias[u];
        const float pmax = ub >= 0.0f ? ub * bmax : ub * bmin;
        if (b->fmax[form] + pmax <= -89.0f) continue;  /* every gate <= -89: silu is 0 */
        const float *f = b->stt[form] ? b->ST + (int64_t)form * N : zero;
        int32_t on = 0, between = 0;
        for (int32_t t = 0; t < n; t++) {
            const float v = f[t] + ub * bias[t];
            g[t] = v;
            on |= (v > -89.0f) & (v != 0.0f);
            between |= (v > -89.0f) & (v < 17.0f) & (v != 0.0f);
        }
        if (!on) continue;
        float *act = b->Y + (int64_t)na * N;
        int32_t cnt = 0;
        /* act = silu(gate) * up, up = 0 + sum of its terms (fused; silu by its saturated
           sides unless some gate lies between them) */
#define ACT_LOOP(UP)                                                                     \
        if (between) for (int32_t t = 0; t < n; t++) {                                    \
            act[t] = unit_silu(g[t]) * (UP); cnt += act[t] != 0.0f;                       \
        } else for (int32_t t = 0; t < n; t++) {                                          \
            act[t] = (g[t] >= 17.0f ? g[t] : 0.0f) * (UP); cnt += act[t] != 0.0f;         \
        }
        if (u < L->n_single) {
            const int32_t c = L->up1_col[u];
            const float v = L->up1_val[u], *x = b->xnz[c] ? b->XF + (int64_t)c * N : zero;
            ACT_LOOP(0.0f + v * x[t])
        } else {
            for (int32_t t = 0; t < n; t++) up[t] = 0.0f;
            for (int32_t p = L->up_ptr[u]; p < L->up_ptr[u + 1]; p++) {
                const int32_t c = L->up_col[p];
                if (!b->xnz[c]) continue;  /* +-0 terms */
                const float v = L->up_val[p], *x = b->XF + (int64_t)c * N;
                for (int32_t t = 0; t < n; t++) up[t] += v * x[t];
            }
            ACT_LOOP(up[t])
        }
#undef ACT_LOOP
        if (!cnt) continue;
        b->list[na++] = u;
    }
    for (int32_t u = 0; u < nu; u++) b->umap[u] = -1;
    for (int32_t k = 0; k < na; k++) b->umap[b->list[k]] = k;
    clear_flags(b->mxt, m->hidden);
    product(&bl->down, &L->down, &L->down_hi, b->Y, b->ones, b->umap, b->MX, b->mxt, b);
    batch_add(b, L->down_rows, L->n_down_rows, NULL);
}

static void batch_free(Batch *b) {
    free(b->HT); free(b->XF); free(b->MX); free(b->ST); free(b->CT); free(b->Y);
    free(b->hnz); free(b->xnz); free(b->mxt); free(b->stt); free(b->cact); free(b->yt); free(b->wflag); free(b->list);
    free(b->r); free(b->row); free(b->row2); free(b->pw); free(b->fmax);
    free(b->any_out); free(b->tmp); free(b->nq); free(b->nk); free(b->nzq); free(b->nzk);
    free(b->qn); free(b->kn); free(b->ynz); free(b->ones); free(b->umap); free(b->hmask); free(b->vt); free(b->ot); free(b->o); free(b->head_x);
    free(b->group_ub); free(b->group_order); free(b->cols);
    free(b->vals);
    memset(b, 0, sizeof *b);
}

/* sizes: hidden, row stride N, rows (slots, forms), channels, y rows (heads * dv,
   units), dk, dv, head groups; 0 when done, -1 when out of memory */
static int batch_alloc(Batch *b, const int64_t *sizes) {
    const int64_t H = sizes[0], N = sizes[1], rows = sizes[2], chans = sizes[3],
                  yrows = sizes[4], dk = sizes[5], dv = sizes[6];
    memset(b, 0, sizeof *b);
    b->N = (int32_t)N;
    b->HT = bzalloc(sizeof(float) * H * N);
    b->XF = bzalloc(sizeof(float) * H * N);
    b->MX = bzalloc(sizeof(float) * H * N);
    b->ST = bzalloc(sizeof(float) * rows * N);
    b->CT = bzalloc(sizeof(float) * chans * N);
    b->Y = bzalloc(sizeof(float) * yrows * N);
    b->hnz = bzalloc(H); b->xnz = bzalloc(H); b->mxt = bzalloc(H); b->stt = bzalloc(rows);
    b->cact = bzalloc(chans); b->yt = bzalloc(yrows); b->wflag = bzalloc(chans);
    b->list = bzalloc(sizeof(int32_t) * (chans + yrows));
    b->r = bzalloc(sizeof(float) * N);
    b->row = bzalloc(sizeof(float) * N);
    b->row2 = bzalloc(sizeof(float) * (N + 64));
    b->pw = bzalloc(sizeof(float) * N * 48);
    b->fmax = bzalloc(sizeof(float) * (rows > N ? rows : N));
    b->any_out = bzalloc(sizeof(int32_t) * N);
    b->tmp = bzalloc(sizeof(float) * (dk + 2 * dv));
    b->nq = bzalloc(sizeof(int32_t) * N); b->nk = bzalloc(sizeof(int32_t) * N);
    b->nzq = bzalloc(sizeof(int32_t) * N * dk); b->nzk = bzalloc(sizeof(int32_t) * N * dk);
    b->qn = bzalloc(sizeof(float) * N * dk); b->kn = bzalloc(sizeof(float) * N * dk);
    b->ynz = bzalloc(yrows); b->ones = bzalloc(yrows); b->umap = bzalloc(sizeof(int32_t) * yrows);
    b->cols = bzalloc(sizeof(int32_t) * (H + chans + yrows));
    b->hmask = bzalloc(sizeof(int32_t) * N);
    b->vt = bzalloc(sizeof(float) * N * dv); b->ot = bzalloc(sizeof(float) * N * dv);
    b->o = bzalloc(sizeof(float) * dv); b->head_x = bzalloc(sizeof(float) * H);
    b->group_ub = bzalloc(sizeof(double) * (sizes[7] + 1));
    b->group_order = bzalloc(sizeof(int32_t) * (sizes[7] + 1));
    b->vals = bzalloc(sizeof(float) * (H + chans + yrows));
    if (b->ones) memset(b->ones, 1, yrows);
    return b->ynz && b->ones && b->umap && b->hmask && b->vt && b->ot && b->o && b->head_x && b->group_ub &&
           b->group_order && b->cols && b->vals && b->HT && b->XF && b->MX && b->ST && b->CT && b->Y && b->xnz && b->mxt &&
           b->stt && b->cact && b->yt && b->wflag && b->list && b->r && b->row &&
           b->row2 && b->pw && b->fmax && b->any_out && b->tmp && b->nq && b->nk &&
           b->nzq && b->nzk && b->qn && b->kn ? 0 : -1;
}

/* each calling thread keeps its own scratch (freed when the thread ends), so that
   threads may run forced passes of different states at once */
typedef struct {
    Batch b;
    int64_t sizes[8];
} BatchKept;

static pthread_key_t batch_key;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;

static void batch_destroy(void *p) {
    batch_free(&((BatchKept *)p)->b);
    free(p);
}

static void batch_key_init(void) { pthread_key_create(&batch_key, batch_destroy); }

/* Teacher forcing in batch: qgpu_forward_forced's contract (hs: n * hidden floats, the
   residual stream of each token after the last layer; greedy[t], -1 where the head's
   input is not finite), every layer's products over all n positions at once. layers[i]:
   layer i's products by rows and the columns its MLP reads (fast_plan.NativePlan).
   Returns 0, or -1 when its scratch cannot be allocated (nothing was run). */
int32_t qgpu_forward_batch(Model *m, float *const *states, float *const *convs,
                           int32_t *const *wins, int32_t *win_counts, const int64_t *tokens,
                           int32_t n, float *hs, int32_t *greedy,
                           const BatchLayer *layers) {
    const int64_t H = m->hidden;
    int64_t rows = 1, chans = 1, yrows = 1;
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->n_slots > rows) rows = L->n_slots;
        if (L->n_forms > rows) rows = L->n_forms;
        const int64_t ch = 2 * (int64_t)L->n_key_heads * m->dk + (int64_t)L->n_heads * m->dv;
        if (ch > chans) chans = ch;
        if ((int64_t)L->n_heads * m->dv > yrows) yrows = (int64_t)L->n_heads * m->dv;
        if (L->n_units > yrows) yrows = L->n_units;
    }
    /* the scratch is kept between calls (per thread) and grown when needed */
    pthread_once(&batch_once, batch_key_init);
    BatchKept *kept = pthread_getspecific(batch_key);
    if (!kept) {
        kept = calloc(1, sizeof *kept);
        if (!kept || pthread_setspecific(batch_key, kept) != 0) { free(kept); return -1; }
    }
    const int64_t want[8] = {H, ((n + TILE - 1) / TILE) * TILE + 16, rows, chans, yrows,
                             m->dk, m->dv, m->head.n_groups};
    int grow = 0;
    for (int32_t k = 0; k < 8; k++) grow |= want[k] > kept->sizes[k];
    if (grow || want[0] != kept->sizes[0] || want[5] != kept->sizes[5] ||
        want[6] != kept->sizes[6]) {
        batch_free(&kept->b);
        int64_t sizes[8];
        for (int32_t k = 0; k < 8; k++)
            sizes[k] = want[k] > kept->sizes[k] || k == 0 || k == 5 || k == 6
                       ? want[k] : kept->sizes[k];
        memset(kept->sizes, 0, sizeof kept->sizes);
        if (batch_alloc(&kept->b, sizes) != 0 || m->conv_k > 64) {
            batch_free(&kept->b);
            return -1;
        }
        memcpy(kept->sizes, sizes, sizeof sizes);
    }
    Batch *b = &kept->b;
    b->n = n;
    const int64_t N = b->N;
    memset(b->HT, 0, sizeof(float) * H * N);
    memset(b->hnz, 0, (size_t)H);
    for (int32_t t = 0; t < n; t++)
        for (int32_t p = m->embed_ptr[tokens[t]]; p < m->embed_ptr[tokens[t] + 1]; p++) {
            b->HT[(int64_t)m->embed_col[p] * N + t] = m->embed_val[p];
            b->hnz[m->embed_col[p]] |= f2u(m->embed_val[p]) != 0;  /* -0 too */
        }
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->kind == 1 && L->n_heads)
            batch_gdn(m, L, &layers[i], b, states[i], convs[i], wins[i], win_counts + i);
        if (L->n_units) batch_mlp(m, L, &layers[i], b);
    }
    transpose(b->HT, N, hs, H, (int32_t)H, n);
    for (int32_t t = 0; t < n; t++) {
        float *h = hs + t * H;
        normalize(m, h, m->final_norm, b->head_x);
        greedy[t] = head_argmax_in(m, b->head_x, b->group_ub, b->group_order);
    }
    return 0;
}
