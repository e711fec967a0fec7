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
 * The MLP visits only the units whose silu(gate) is not 0 (mlp_units_forms: a form's
 * units by ascending bias, the gate monotone along them), and sums the acts into down in
 * ascending unit order whatever the thread count. With AVX2 (-march=native), the conv
 * outputs' silu runs 8 lanes at a time (the same IEEE operations lane by lane, fmaf as
 * _mm256_fmadd_ps); without it, the same scalar code as the tails. Timing:
 * qgpu_set_profile(buf) adds each layer's mixer and MLP seconds.
 *
 * Generation (qgpu_forward_steady) skips work whose result is known exactly: a GDN
 * projection or an MLP whose input (the norm scale and h at the columns it reads) equals,
 * bit for bit, one of the last 32 that layer part saw takes the result computed then
 * (fast_memo.c), and a conv channel whose window is constant and whose input repeats is
 * left alone (fast_gdn.c, Steady). qgpu_forward is the plain path (window lists).
 * qgpu_generate_steady runs greedy tokens on the steady path up to a token of the
 * caller's stop set (no return to Python per token). The scans for nonzero or changed
 * entries test 32 floats by a mask (AVX-512 or AVX2 compares; elsewhere lane by lane).
 *
 * One translation unit over #included parts (fast_native.INCLUDED), in this order:
 * fast_math.c (elementary functions, the GDN head's delta rule and read), fast_layout.c
 * (the data layout), fast_memo.c (reused results), fast_gdn.c (a mixer layer), fast_team.c (the second thread),
 * fast_head.c (the output head), fast_batch.c and fast_batch_ops.c (the batched kernel).
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__AVX2__) || defined(__AVX512F__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef uint32_t v8u __attribute__((vector_size(32)));

#include "fast_math.c"

#include "fast_layout.c"

/* --- pieces --- */

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
       C_CONV, C_HEAD_ROWS, C_TOKENS, C_PROJ_REUSED, C_MLP_REUSED, C_KEY, C_N };
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

/* Bit j of the result: a[j] is not +-0 (nonzero_mask32), a[j] and b[j] differ in bits
   (changed_mask32), for a block of 32 floats. AVX-512 and AVX2 (-march=native) compare
   16 or 8 lanes at a time; elsewhere the same test lane by lane. */
static inline uint32_t nonzero_mask32(const float *a) {
#if defined(__AVX512F__)
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    return (uint32_t)_mm512_test_epi32_mask(_mm512_loadu_si512(a), abs)
           | (uint32_t)_mm512_test_epi32_mask(_mm512_loadu_si512(a + 16), abs) << 16;
#elif defined(__AVX2__)
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), zero = _mm256_setzero_si256();
    uint32_t mask = 0;
    for (int q = 0; q < 4; q++) {
        const __m256i x = _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(a + 8 * q)), abs);
        const uint32_t zeros = (uint32_t)_mm256_movemask_ps(
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(x, zero)));
        mask |= (~zeros & 0xffu) << (8 * q);
    }
    return mask;
#else
    uint32_t mask = 0;
    for (int32_t j = 0; j < 32; j++) {
        uint32_t b;
        memcpy(&b, a + j, 4);
        mask |= (uint32_t)((b & 0x7fffffffu) != 0) << j;
    }
    return mask;
#endif
}

static inline uint32_t changed_mask32(const float *a, const float *b) {
#if defined(__AVX512F__)
    return (uint32_t)_mm512_cmpneq_epi32_mask(_mm512_loadu_si512(a), _mm512_loadu_si512(b))
           | (uint32_t)_mm512_cmpneq_epi32_mask(_mm512_loadu_si512(a + 16),
                                                _mm512_loadu_si512(b + 16)) << 16;
#elif defined(__AVX2__)
    uint32_t mask = 0;
    for (int q = 0; q < 4; q++) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(a + 8 * q));
        const __m256i y = _mm256_loadu_si256((const __m256i *)(b + 8 * q));
        const uint32_t same = (uint32_t)_mm256_movemask_ps(
            _mm256_castsi256_ps(_mm256_cmpeq_epi32(x, y)));
        mask |= (~same & 0xffu) << (8 * q);
    }
    return mask;
#else
    uint32_t mask = 0;
    for (int32_t j = 0; j < 32; j++) {
        uint32_t x, y;
        memcpy(&x, a + j, 4);
        memcpy(&y, b + j, 4);
        mask |= (uint32_t)(x != y) << j;
    }
    return mask;
#endif
}

/* the lanes the mask tests above compare at once in this build (tests check that a
   build without AVX2 or AVX-512 gives the same results) */
int32_t qgpu_simd_lanes(void) {
#if defined(__AVX512F__)
    return 16;
#elif defined(__AVX2__)
    return 8;
#else
    return 1;
#endif
}

/* indices of the nonzero entries of a[0..n), ascending (blocks of 32 by mask) */
static int32_t nonzero_entries(const float *a, int32_t n, int32_t *out) {
    int32_t k = 0, i = 0;
    for (; i + 32 <= n; i += 32)
        for (uint32_t mask = nonzero_mask32(a + i); mask; mask &= mask - 1)
            out[k++] = i + __builtin_ctz(mask);
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

#include "fast_memo.c"

#include "fast_gdn.c"

static inline float unit_silu(float g) {  /* silu(gate) as silu() computes it */
    float s = g >= 17.0f ? g : 0.0f;
    if (g > -89.0f && g < 17.0f && g != 0.0f) s = g / (1.0f + np_expf(-g));
    return s;
}

/* what the unit scan reads, in locals (stores to the acts and bits cannot alias them) */
typedef struct {
    const float *x, *up1_val, *up_val;
    const int32_t *up1_col, *up_ptr, *up_col;
    int32_t n_single;
    float *acts;
    uint32_t *bits;
} UnitScan;

/* act = silu(gate) * up of unit u with gate g, as the reference computes it (up = 0 +
   its terms in order); written to acts[u] and marked in bits when not +-0 (a +-0 act
   adds +-0 to the down sums) */
static inline void unit_act(const UnitScan *c, int32_t u, float g) {
    const float s = unit_silu(g);
    if (s == 0.0f) return;
    float up = 0.0f;
    if (u < c->n_single) up += c->up1_val[u] * c->x[c->up1_col[u]];
    else for (int32_t p = c->up_ptr[u]; p < c->up_ptr[u + 1]; p++)
        up += c->up_val[p] * c->x[c->up_col[p]];
    const float act = s * up;
    c->acts[u] = act;
    c->bits[u >> 5] |= (uint32_t)(act != 0.0f) << (u & 31);
}

/* The units of forms [f0, f1) whose act is not +-0, marked in bits. A form's units are
   listed by ascending bias (form_unit, form_bias): gate = form + bias * bias_in is then
   monotone along the list (float32 rounding is monotone), so the units with a gate
   above -89 (silu not 0) are its end (bias_in >= 0) or its start (bias_in < 0). A first
   pass keeps the forms whose gate at that end is above -89 (branch-free, over
   form_bias_max or form_bias_min: the same bits as the end unit's gate); each kept form
   is scanned from that end to the first gate <= -89. With a bias_in that is not finite
   every unit is evaluated. Returns the units visited. */
static int64_t mlp_units_forms(const Model *m, const Layer *L, const float *x, int32_t f0,
                               int32_t f1, uint32_t *bits, int32_t *kept) {
    const float bias_in = L->bias_col >= 0 ? x[L->bias_col] : 0.0f;
    const UnitScan c = {x, L->up1_val, L->up_val, L->up1_col, L->up_ptr, L->up_col,
                        L->n_single, m->units, bits};
    const int32_t *ptr = L->form_ptr, *unit = L->form_unit;
    const float *bias = L->form_bias, *forms = m->forms;
    if (!isfinite(bias_in)) {
        for (int32_t f = f0; f < f1; f++)
            for (int32_t k = ptr[f]; k < ptr[f + 1]; k++)
                unit_act(&c, unit[k], forms[f] + bias[k] * bias_in);
        return ptr[f1] - ptr[f0];
    }
    const int up = bias_in >= 0.0f;
    const float *end = up ? L->form_bias_max : L->form_bias_min;
    int32_t n = 0;
    for (int32_t f = f0; f < f1; f++) {  /* branch-free append */
        kept[n] = f;
        n += forms[f] + end[f] * bias_in > -89.0f;
    }
    const int32_t step = up ? -1 : 1;
    int64_t visited = 0;
    for (int32_t t = 0; t < n; t++) {
        const int32_t f = kept[t], a = ptr[f], b = ptr[f + 1];
        const float v = forms[f];
        for (int32_t k = up ? b - 1 : a; k >= a && k < b; k += step) {
            const float g = v + bias[k] * bias_in;
            visited++;
            if (g <= -89.0f) break;
            unit_act(&c, unit[k], g);
        }
    }
    return visited;
}

/* the marked units in ascending order (the down sums' order of terms) with their acts:
   m->unit_list, m->acts; returns the count */
static int32_t list_acts(const Model *m, const Layer *L, const uint32_t *bits0,
                         const uint32_t *bits1) {
    int32_t n = 0;
    for (int32_t w = 0; w < (L->n_units + 31) >> 5; w++) {
        uint32_t word = bits0[w] | bits1[w];
        while (word) {
            const int32_t u = (w << 5) + __builtin_ctz(word);
            word &= word - 1;
            m->unit_list[n] = u;
            m->acts[n++] = m->units[u];
        }
    }
    return n;
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
   forms; (2) each part's units (those of its forms); then the acts listed in unit
   order; (3) each part's rows of the down product and of the residual --- */

static void mlp_gate_part(const Model *m, const Layer *L, int part) {
    float *x = part ? m->x2 : m->x;
    normalize(m, m->h, L->post_norm, x);
    const int32_t r0 = part ? L->form_split : 0, r1 = part ? L->n_forms : L->form_split;
    memset(m->forms + r0, 0, sizeof(float) * (r1 - r0));
    csc_apply(part ? &L->gate_hi : &L->gate, x, m->forms, C_GATE);
}

static inline uint32_t *part_bits(const Model *m, const Layer *L, int part) {
    return (uint32_t *)m->unit_bits + (part ? (L->n_units + 31) >> 5 : 0);
}

static void mlp_units_part(const Model *m, const Layer *L, int part) {
    uint32_t *bits = part_bits(m, L, part);
    memset(bits, 0, sizeof(uint32_t) * ((L->n_units + 31) >> 5));
    const int64_t visited = part
        ? mlp_units_forms(m, L, m->x2, L->form_split, L->n_forms, bits, m->unit_list2)
        : mlp_units_forms(m, L, m->x, 0, L->form_split, bits, m->unit_list);
    m->n_visited[part] = (int32_t)visited;
}

static void mlp_down_part(const Model *m, const Layer *L, int part) {
    const Csc *d = part ? &L->down_hi : &L->down;
    const int32_t a = part ? L->down_row_split : 0, b = part ? L->n_down_rows : L->down_row_split;
    const int32_t *rows = L->down_rows;
    for (int32_t t = a; t < b; t++) m->mixed[rows[t]] = 0.0f;
    down_apply(d, m->unit_list, m->acts, 0, m->n_list[0], m->mixed);
    for (int32_t t = a; t < b; t++) m->h[rows[t]] += m->mixed[rows[t]];
}

static void mlp_compute(const Model *m, const Layer *L) {
    const int used = team_begin();
    run_parts(m, L, mlp_gate_part, used);
    run_parts(m, L, mlp_units_part, used);
    const int32_t n_act = m->n_list[0] = list_acts(m, L, part_bits(m, L, 0), part_bits(m, L, 1));
    run_parts(m, L, mlp_down_part, used);
    team_end(used);
    if (count_buf) {
        COUNT(C_UNITS, m->n_visited[0] + m->n_visited[1]);
        COUNT(C_ACTS, n_act);
        for (int32_t t = 0; t < n_act; t++) {
            const int32_t u = m->unit_list[t];
            COUNT(C_DOWN, L->down.ptr[u + 1] - L->down.ptr[u] + L->down_hi.ptr[u + 1] - L->down_hi.ptr[u]);
            if (u >= L->n_single) COUNT(C_UP, L->up_ptr[u + 1] - L->up_ptr[u]);
        }
    }
}

/* the MLP, its result reused when its input repeats (fast_memo.c) */
static void mlp_layer(const Model *m, const Layer *L, Memo *mo) {
    MemoTable *t = memo_table(mo, m, L, 1);
    int way = -1;
    if (t) {
        COUNT(C_KEY, t->n_key);
        if (memo_mlp_lookup(mo, t, m, L, &way) != MEMO_MISS) { COUNT(C_MLP_REUSED, 1); return; }
    }
    mlp_compute(m, L);
    if (t && way >= 0) memo_mlp_store(t, way, m, L);
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
static int32_t forward(const Model *m, float *const *states, float *const *convs,
                       int32_t *const *wins, int32_t *win_counts, float *const *lasts,
                       float *const *outs, uint32_t *const *movings, int32_t *moving_counts,
                       int64_t token, float *logits, int32_t want_argmax) {
    embed_row(m, token, m->h);
    COUNT(C_TOKENS, 1);
    Memo *mo = memo_on ? m->memo : NULL;  /* the plan's tables, unless another thread has them */
    if (mo && pthread_mutex_trylock(&mo->lock) != 0) mo = NULL;
    double *prof = prof_buf, t0 = prof ? now() : 0.0, t1;
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->kind == 1 && L->n_heads) {
            const Steady sd = {lasts ? lasts[i] : NULL, outs ? outs[i] : NULL,
                               movings ? movings[i] : NULL,
                               moving_counts ? moving_counts + i : NULL};
            gdn_layer(m, L, states[i], convs[i], wins ? wins[i] : NULL,
                      win_counts ? win_counts + i : NULL, mo, lasts ? &sd : NULL);
        }
        if (prof) { t1 = now(); prof[2 * i] += t1 - t0; t0 = t1; }
        if (L->n_units) mlp_layer(m, L, mo);
        if (prof) { t1 = now(); prof[2 * i + 1] += t1 - t0; t0 = t1; }
    }
    if (mo) pthread_mutex_unlock(&mo->lock);
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

int32_t qgpu_forward(const Model *m, float *const *states, float *const *convs,
                     int32_t *const *wins, int32_t *win_counts, int64_t token,
                     float *logits, int32_t want_argmax) {
    return forward(m, states, convs, wins, win_counts, NULL, NULL, NULL, NULL, token, logits,
                   want_argmax);
}

/* qgpu_forward on the steady path (fast_gdn.c, Steady): per GDN layer i, lasts[i],
   outs[i], movings[i] (a bitmap), moving_counts[i] instead of the window lists; the same
   results. */
int32_t qgpu_forward_steady(const Model *m, float *const *states, float *const *convs,
                            float *const *lasts, float *const *outs, uint32_t *const *movings,
                            int32_t *moving_counts, int64_t token, float *logits,
                            int32_t want_argmax) {
    return forward(m, states, convs, NULL, NULL, lasts, outs, movings, moving_counts, token,
                   logits, want_argmax);
}

/* Greedy generation on the steady path, without a return to the caller per token:
   feeds token, then each greedy token in turn, writing them to out, until a token whose
   stop[token] is set, max_n tokens, or -1 (the head's input not finite: the caller takes
   the argmax of qgpu_head_logits, the token last fed still being current). Returns the
   tokens written; each step is qgpu_forward_steady's. */
int32_t qgpu_generate_steady(const Model *m, float *const *states, float *const *convs,
                             float *const *lasts, float *const *outs,
                             uint32_t *const *movings, int32_t *moving_counts, int64_t token,
                             const uint8_t *stop, int32_t max_n, int32_t *out) {
    int32_t n = 0;
    while (n < max_n) {
        const int32_t next = forward(m, states, convs, NULL, NULL, lasts, outs, movings,
                                     moving_counts, token, NULL, 1);
        out[n++] = next;
        if (next < 0 || stop[next]) break;
        token = next;
    }
    return n;
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
                gdn_layer(m, L, states[i], convs[i], wins[i], win_counts + i, NULL, NULL);
            if (L->n_units) mlp_layer(m, L, NULL);
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
