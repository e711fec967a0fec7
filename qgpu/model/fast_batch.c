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
 *   The same holds for out_proj, and for the MLP's down product, which adds each unit's
 *   acts into its down rows as the per-token kernel does (units in ascending order,
 *   the per-token order for any thread count; a row's first term is 0 + v * act).
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
#include "fast_batch_ops.c"

/* Rows that are not positions of one sequence but one position of each of n sequences
   (generation of several launches, fast_multi.c): each row's own recurrent states, and
   the conv states of all rows side by side (row t is lane t of the lane store). NULL
   for teacher forcing. */
typedef struct {
    float *const *const *states;   /* [n] row's per-layer table of recurrent states */
    float *const *stores;          /* per layer: the conv states [n_ch][K][pitch] */
    uint8_t *const *flags;         /* per layer: channels whose window is not 0 in a lane */
    int32_t pitch;                 /* lanes per store row (>= n) */
} Rows;

static void lanes_conv(const Model *m, const Layer *L, Batch *b, const Rows *rows,
                       int32_t layer, int32_t n_ch);

/* --- optional timing by phase (benchmarks/bench_batched_check.py --phases): seconds
   added into the calling thread's buffer of one double per name of BATCH_PHASES, set by
   qgpu_set_batch_profile (NULL, the default: off, one test per mark) --- */
#define BATCH_PHASES "setup,mixer norms,projections,conv,q/k lists,recurrence,gated output," \
                     "out product,residual adds,MLP norms,gate forms,unit bounds," \
                     "units and down,head"
enum { PH_SETUP, PH_MIXER_NORM, PH_PROJ, PH_CONV, PH_QK, PH_RECUR, PH_GATED, PH_OUT,
       PH_ADD, PH_MLP_NORM, PH_GATE, PH_BOUNDS, PH_UNITS, PH_HEAD, PH_END = -1 };

static __thread double *phase_buf, phase_t;
static __thread int phase_at = PH_END;

void qgpu_set_batch_profile(double *buf) { phase_buf = buf; phase_at = PH_END; }

const char *qgpu_batch_phases(void) { return BATCH_PHASES; }

static inline void phase(int p) {  /* the time since the last mark goes to its phase */
    if (!phase_buf) return;
    const double t = now();
    if (phase_at != PH_END) phase_buf[phase_at] += t - phase_t;
    phase_t = t;
    phase_at = p;
}

/* the causal conv of one sequence's positions: channel by channel over the positions
   (CT rows, cact), the conv state and its window list advanced past the last position */
static void batch_conv(const Model *m, const Layer *L, Batch *b, float *conv, int32_t *win,
                       int32_t *n_win, int32_t n_ch) {
    const int32_t K = m->conv_k, n = b->n, N = b->N;
    int32_t kept = 0;
    float *seq = b->row2;  /* the window then the first inputs */
    for (int32_t k = 0; k < *n_win; k++) b->wflag[win[k]] = 1;  /* state not all 0 */
    for (int32_t c = 0; c < n_ch; c++) {
        float *st = conv + (int64_t)c * K;
        if (!b->wflag[c] && !b->stt[c]) {
            b->cact[c] = 0;
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
}

static void batch_gdn(const Model *m, const Layer *L, const BatchLayer *bl, Batch *b,
                      float *S_all, float *conv, int32_t *win, int32_t *n_win,
                      const Rows *rows, int32_t layer) {
    const int32_t dk = m->dk, dv = m->dv, nh = L->n_heads, nkh = L->n_key_heads;
    const int32_t n_qk = nkh * dk, n_ch = 2 * n_qk + nh * dv, n = b->n, N = b->N;
    phase(PH_MIXER_NORM);
    batch_norm_scale(m, b);
    batch_fill(m, b, L->in_norm, L->proj.col, L->proj.n_cols);
    clear_flags(b->stt, L->n_slots);
    phase(PH_PROJ);
    product(&bl->proj, &L->proj, NULL, b->XF, b->xnz, b->ST, b->stt, b);
    phase(PH_CONV);
    if (rows) lanes_conv(m, L, b, rows, layer, n_ch);
    else batch_conv(m, L, b, conv, win, n_win, n_ch);
    phase(PH_RECUR);
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
        phase(PH_QK);
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
        phase(PH_RECUR);
        int32_t writes = 0;  /* some position writes (k nonzero) */
        for (int32_t t = 0; t < n; t++) writes |= b->nk[t];
        for (int32_t s = 0; s < nh; s++) {
            if (L->key_slot[s] != kh) continue;
            phase(PH_RECUR);
            const int64_t head_at = (int64_t)L->head_ids[s] * dk * dv;
            float *S = rows ? NULL : S_all + head_at;  /* rows of sequences: each row's */
            int32_t read = 0;  /* the head read at some position */
            for (int32_t t = 0; t < n; t++) b->hmask[t] = 0;
            float *VT = b->vt, *OT = b->ot;  /* [N][dv]: v and o * r by position */
            if (writes) {  /* v by position (the rows of inactive channels: +0) */
                const int32_t v0 = 2 * n_qk + s * dv;
                float *v = b->CT + (int64_t)v0 * N;
                for (int32_t e = 0; e < dv; e++)
                    if (!b->cact[v0 + e]) memset(v + (int64_t)e * N, 0, sizeof(float) * n);
                transpose(v, N, VT, dv, dv, n);
            }
            /* a row of a the projection did not touch is +0 at every position: its decay
               is one value for the chunk (the same function of the same input) */
            const int32_t a_rows = b->stt[a0 + s];
            const float decay0 = a_rows ? 1.0f
                : np_expf(L->neg_exp_a_log[s] * softplus(0.0f + L->dt_bias[s]));
            for (int32_t t = 0; t < n; t++) {
                const float decay = a_rows
                    ? np_expf(L->neg_exp_a_log[s] * softplus(st_at(b, a0 + s, t) + L->dt_bias[s]))
                    : decay0;
                if (rows) S = rows->states[t][layer] + head_at;
                if (decay != 1.0f) for (int64_t i = 0; i < (int64_t)dk * dv; i++) S[i] *= decay;
                const int32_t nk = b->nk[t], *nzk = b->nzk + (int64_t)t * dk;
                const float *kn = b->kn + (int64_t)t * dk;
                if (nk)
                    gdn_delta_rule(S, nzk, nk, kn, VT + (int64_t)t * dv,
                                   sigmoid(st_at(b, b0 + s, t)), b->o, dv);
                const int32_t nq = b->nq[t], *nzq = b->nzq + (int64_t)t * dk;
                if (!nq) continue;  /* reads 0: the head's output is 0 */
                float *o = b->o;
                gdn_read(S, nzq, nq, b->qn + (int64_t)t * dk, o, dv);
                float r = 1.0f / sqrtf(pairwise_sumsq(o, dv) / (float)dv + m->eps);
                read = 1;
                for (int32_t e = 0; e < dv; e++) OT[(int64_t)t * dv + e] = o[e] * r;
                b->hmask[t] = 1;
                b->any_out[t] = 1;
            }
            if (!read) continue;
            /* y = (norm_w * (o r)) * silu(z) row by row, where the head read (+0 elsewhere) */
            phase(PH_GATED);
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
    phase(PH_OUT);
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
    product(&bl->out, &L->out, NULL, b->Y, b->ynz, b->MX, b->mxt, b);
    phase(PH_ADD);
    batch_add(b, L->out_rows, L->n_out_rows, b->any_out);
}

/* unit u (gate = form row f + ub * bias) over the positions: its acts in act; 1 when
   some act is not +-0 (else its down terms would all be +-0: skipped) */
static int unit_acts(const Layer *L, Batch *b, int32_t u, const float *f, float ub,
                     const float *bias, const float *zero, float *act) {
    const int32_t n = b->n, N = b->N;
    float *g = b->row2, *up = b->pw;
    int32_t on = 0, between = 0;
    for (int32_t t = 0; t < n; t++) {
        const float v = f[t] + ub * bias[t];
        g[t] = v;
        on |= (v > -89.0f) & (v != 0.0f);
        between |= (v > -89.0f) & (v < 17.0f) & (v != 0.0f);
    }
    if (!on) return 0;
    int32_t cnt = 0;
    /* act = silu(gate) * up, up = 0 + sum of its terms (fused; silu by its saturated
       sides unless some gate lies between them) */
#define ACT_LOOP(UP)                                                                     \
    if (between) for (int32_t t = 0; t < n; t++) {                                        \
        act[t] = unit_silu(g[t]) * (UP); cnt += act[t] != 0.0f;                           \
    } else for (int32_t t = 0; t < n; t++) {                                              \
        act[t] = (g[t] >= 17.0f ? g[t] : 0.0f) * (UP); cnt += act[t] != 0.0f;             \
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
    return cnt != 0;
}

/* MX rows of unit u's down column += v * act (the first term of a row: 0 + v * act): the
   per-token kernel's order of terms when the units come in ascending order */
static void scatter_down(const Csc *d, int32_t u, const float *act, Batch *b) {
    const int32_t n = b->n, N = b->N;
    for (int32_t p = d->ptr[u]; p < d->ptr[u + 1]; p++) {
        const int32_t r = d->row[p];
        const float v = d->val[p];
        float *o = b->MX + (int64_t)r * N;
        if (!b->mxt[r]) {
            b->mxt[r] = 1;
            for (int32_t t = 0; t < n; t++) o[t] = 0.0f + v * act[t];
        } else {
            for (int32_t t = 0; t < n; t++) o[t] += v * act[t];
        }
    }
}

/* the first of form_bias[a..e) (ascending) that is >= 0, or e */
static int32_t first_nonnegative(const float *bias, int32_t a, int32_t e) {
    while (a < e) {
        const int32_t mid = a + (e - a) / 2;
        if (bias[mid] >= 0.0f) e = mid; else a = mid + 1;
    }
    return a;
}

/* the MLP over the positions: gate forms, units, acts, down. A unit is skipped where a
   bound shows silu(gate) is 0 at every position: gate <= max(form) + pmax(bias) <=
   -89, pmax = ub * (max or min of bias_in over the positions). A form's units are listed
   by ascending bias (form_unit): over its units of bias >= 0, and over those < 0, the
   bound is monotone (float32 rounding is monotone), so the units it keeps are one end
   of each run, scanned from that end to the first it drops -- the same units as a test
   of every unit (bounds not finite: every unit is tested). The kept units are marked
   in a bitmap and evaluated in ascending order, each one's row of acts added into its
   down rows while it is in cache (the per-token order of the down terms), so the acts
   of all units are never stored. */
static void batch_mlp(const Model *m, const Layer *L, const BatchLayer *bl, Batch *b) {
    const int32_t n = b->n, N = b->N;
    phase(PH_MLP_NORM);
    batch_norm_scale(m, b);
    batch_fill(m, b, L->post_norm, bl->xcols, bl->n_xcols);
    clear_flags(b->stt, L->n_forms);
    phase(PH_GATE);
    product(&bl->gate, &L->gate, &L->gate_hi, b->XF, b->xnz, b->ST, b->stt, b);
    phase(PH_BOUNDS);
    float *zero = b->row;
    memset(zero, 0, sizeof(float) * N);
    const float *bias = L->bias_col >= 0 && b->xnz[L->bias_col]
                        ? b->XF + (int64_t)L->bias_col * N : zero;
    const float bmax = row_max(bias, n), bmin = -row_max_neg(bias, n);
    const int finite = isfinite(bmax) && isfinite(bmin);
    const int32_t *ptr = L->form_ptr, *unit = L->form_unit;
    const float *fb = L->form_bias;
    uint32_t *bits = b->ubits;  /* the units the bound keeps (all 0 between layers) */
#define MARK(k) (bits[unit[k] >> 5] |= 1u << (unit[k] & 31))
    for (int32_t form = 0; form < L->n_forms; form++) {
        const float top = b->stt[form] ? row_max(b->ST + (int64_t)form * N, n) : 0.0f;
#define KEEPS(k) (!(top + (fb[k] >= 0.0f ? fb[k] * bmax : fb[k] * bmin) <= -89.0f))
        const int32_t a = ptr[form], e = ptr[form + 1];
        if (!finite) {
            for (int32_t k = a; k < e; k++)
                if (KEEPS(k)) MARK(k);
            continue;
        }
        const int32_t z = first_nonnegative(fb, a, e);
        /* [a, z): bias < 0, the bound rises with it when bmin > 0; [z, e): bias >= 0, it
           rises when bmax >= 0 */
        if (bmin > 0.0f) for (int32_t k = z - 1; k >= a && KEEPS(k); k--) MARK(k);
        else for (int32_t k = a; k < z && KEEPS(k); k++) MARK(k);
        if (bmax >= 0.0f) for (int32_t k = e - 1; k >= z && KEEPS(k); k--) MARK(k);
        else for (int32_t k = z; k < e && KEEPS(k); k++) MARK(k);
#undef KEEPS
    }
#undef MARK
    /* the kept units in ascending order: acts in one row, then into the down sums */
    phase(PH_UNITS);
    clear_flags(b->mxt, m->hidden);
    float *act = b->Y;
    for (int32_t w = 0; w <= (L->n_units - 1) >> 5; w++) {
        uint32_t x = bits[w];
        bits[w] = 0;
        while (x) {
            const int32_t u = (w << 5) + __builtin_ctz(x);
            x &= x - 1;
            const int32_t form = L->unit_form[u];
            const float *f = b->stt[form] ? b->ST + (int64_t)form * N : zero;
            if (!unit_acts(L, b, u, f, L->unit_bias[u], bias, zero, act)) continue;
            scatter_down(&L->down, u, act, b);
            scatter_down(&L->down_hi, u, act, b);
        }
    }
    phase(PH_ADD);
    batch_add(b, L->down_rows, L->n_down_rows, NULL);
}

/* each calling thread keeps its own scratch (freed when the thread ends), so that
   threads may run forced passes of different states at once */
typedef struct {
    Batch b;
    int64_t sizes[BATCH_SIZES];
} BatchKept;

static pthread_key_t batch_key;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;

static void batch_destroy(void *p) {
    batch_free(&((BatchKept *)p)->b);
    free(p);
}

static void batch_key_init(void) { pthread_key_create(&batch_key, batch_destroy); }

/* this thread's scratch for n rows (kept between calls, grown when needed), the residual
   stream holding the tokens' embeddings; NULL when it cannot be allocated */
static Batch *batch_start(const Model *m, const int64_t *tokens, int32_t n) {
    const int64_t H = m->hidden;
    int64_t rows = 1, chans = 1, yrows = 1, units = 1;
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->n_slots > rows) rows = L->n_slots;
        if (L->n_forms > rows) rows = L->n_forms;
        const int64_t ch = 2 * (int64_t)L->n_key_heads * m->dk + (int64_t)L->n_heads * m->dv;
        if (ch > chans) chans = ch;
        if ((int64_t)L->n_heads * m->dv > yrows) yrows = (int64_t)L->n_heads * m->dv;
        if (L->n_units > units) units = L->n_units;
    }
    pthread_once(&batch_once, batch_key_init);
    BatchKept *kept = pthread_getspecific(batch_key);
    if (!kept) {
        kept = calloc(1, sizeof *kept);
        if (!kept || pthread_setspecific(batch_key, kept) != 0) {
            free(kept);
            return NULL;
        }
    }
    const int64_t want[BATCH_SIZES] = {H, ((n + TILE - 1) / TILE) * TILE + 16, rows, chans,
                                       yrows, m->dk, m->dv, m->head.n_groups, units};
    int grow = 0;
    for (int32_t k = 0; k < BATCH_SIZES; k++) grow |= want[k] > kept->sizes[k];
    if (grow || want[0] != kept->sizes[0] || want[5] != kept->sizes[5] ||
        want[6] != kept->sizes[6]) {
        batch_free(&kept->b);
        int64_t sizes[BATCH_SIZES];
        for (int32_t k = 0; k < BATCH_SIZES; k++)
            sizes[k] = want[k] > kept->sizes[k] || k == 0 || k == 5 || k == 6
                       ? want[k] : kept->sizes[k];
        memset(kept->sizes, 0, sizeof kept->sizes);
        if (batch_alloc(&kept->b, sizes) != 0 || m->conv_k > 64) {
            batch_free(&kept->b);
            return NULL;
        }
        memcpy(kept->sizes, sizes, sizeof sizes);
    }
    Batch *b = &kept->b;
    b->n = n;
    const int64_t N = b->N;
    for (int64_t r = 0; r < H; r++)  /* rows the last call left other than +0 */
        if (b->hnz[r]) memset(b->HT + r * N, 0, sizeof(float) * N);
    memset(b->hnz, 0, (size_t)H);
    for (int32_t t = 0; t < n; t++)
        for (int32_t p = m->embed_ptr[tokens[t]]; p < m->embed_ptr[tokens[t] + 1]; p++) {
            b->HT[(int64_t)m->embed_col[p] * N + t] = m->embed_val[p];
            b->hnz[m->embed_col[p]] |= f2u(m->embed_val[p]) != 0;  /* -0 too */
        }
    return b;
}

/* the final norm (normalize's operations) at the columns the head reads, then the
   argmax, row by row; hs: every row's residual stream when all_hidden, else only those
   of the rows whose greedy is -1 (the head's input not finite) */
static void batch_head(const Model *m, Batch *b, float *hs, int32_t all_hidden,
                       int32_t *greedy) {
    const int32_t n = b->n;
    const int64_t H = m->hidden, N = b->N;
    if (all_hidden) transpose(b->HT, N, hs, H, (int32_t)H, n);
    batch_norm_scale(m, b);
    const Head *hd = &m->head;
    for (int32_t t = 0; t < n; t++) {
        const float r = b->r[t];
        for (int32_t k = 0; k < hd->n_head_cols; k++) {
            const int32_t c = hd->head_cols[k];
            b->head_x[c] = (b->HT[(int64_t)c * N + t] * r) * m->final_norm[c];
        }
        greedy[t] = head_argmax_in(m, b->head_x, b->group_ub, b->group_order);
        if (greedy[t] < 0 && !all_hidden)  /* the row the caller's fallback reads */
            for (int64_t c = 0; c < H; c++) hs[t * H + c] = b->HT[c * N + t];
    }
}

/* Teacher forcing in batch: qgpu_forward_forced's contract (hs: n * hidden floats, the
   residual stream of each token after the last layer; greedy[t], -1 where the head's
   input is not finite), every layer's products over all n positions at once; with
   all_hidden 0, hs receives only the rows of the positions whose greedy is -1 (the
   others are left as they are: the transpose is skipped). layers[i]:
   layer i's products by rows and the columns its MLP reads (fast_plan.NativePlan).
   Returns 0, or -1 when its scratch cannot be allocated (nothing was run). */
int32_t qgpu_forward_batch(Model *m, float *const *states, float *const *convs,
                           int32_t *const *wins, int32_t *win_counts, const int64_t *tokens,
                           int32_t n, float *hs, int32_t all_hidden, int32_t *greedy,
                           const BatchLayer *layers) {
    phase(PH_SETUP);
    Batch *b = batch_start(m, tokens, n);
    if (!b) {
        phase(PH_END);
        return -1;
    }
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->kind == 1 && L->n_heads)
            batch_gdn(m, L, &layers[i], b, states[i], convs[i], wins[i], win_counts + i,
                      NULL, i);
        if (L->n_units) batch_mlp(m, L, &layers[i], b);
    }
    phase(PH_HEAD);
    batch_head(m, b, hs, all_hidden, greedy);
    phase(PH_END);
    return 0;
}

#include "fast_multi.c"
