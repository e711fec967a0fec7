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
 *
 * One translation unit over #included parts (fast_native.INCLUDED), in this order:
 * fast_math.c (elementary functions, the GDN head's delta rule and read), fast_layout.c
 * (the data layout), fast_gdn.c (a mixer layer), fast_team.c (the second thread),
 * fast_head.c (the output head), fast_batch.c and fast_batch_ops.c (the batched kernel).
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

#include "fast_math.c"

#include "fast_layout.c"

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

#include "fast_gdn.c"

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

#include "fast_team.c"

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

#include "fast_head.c"

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
