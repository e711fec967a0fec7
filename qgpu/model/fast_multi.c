/* fast_multi.c: #included by fast_batch.c (one translation unit): one generation step of
 * n independent sequences at once (`qgpu_forward_multi`): row t of the batch is the next
 * token of sequence t, with its own recurrent and conv states, so every layer's weights
 * are read once per step for all of them.
 *
 * Everything but the mixer's state is the batched kernel's (fast_batch.c), whose rows
 * need not be positions of one sequence: norms, products, the MLP and the head compute
 * each row from that row's inputs alone, with the per-token kernel's operations in its
 * order. What differs is what carries state between tokens:
 * - the conv (multi_conv), row by row as gdn_layer runs it: the channels whose input
 *   or window holds a nonzero, the same operations on that row's window, its list of
 *   channels with a nonzero window rebuilt; a channel's output row (CT) holds +0 at the
 *   rows that left it alone, the per-token kernel's value of a channel it skips;
 * - the delta rule reads and writes each row's own recurrent state (batch_gdn with
 *   `Rows`): the per-token kernel's code on that row's values.
 * tests/model/test_fast_multi.py compares tokens and states with one-at-a-time steps on
 * random models whose sums are not exact, with sequences joining and leaving.
 */

/* each row's channels with a nonzero input (ascending) and those inputs: nl, nv (rows
   of `cap`), counts in cnt; one pass over the projection's rows (contiguous) */
static void nonzero_inputs(Batch *b, int32_t n_ch, int64_t cap, int32_t *cnt) {
    const int32_t n = b->n, N = b->N;
    for (int32_t t = 0; t < n; t++) cnt[t] = 0;
    for (int32_t c = 0; c < n_ch; c++) {
        if (!b->stt[c]) continue;  /* not written: +0 at every row */
        const float *row = b->ST + (int64_t)c * N;
        int32_t t = 0;
#ifdef __AVX512F__
        for (; t + 16 <= n; t += 16) {
            __mmask16 mk = _mm512_cmp_ps_mask(_mm512_loadu_ps(row + t), _mm512_setzero_ps(),
                                              _CMP_NEQ_UQ);
            while (mk) {
                const int32_t tt = t + __builtin_ctz(mk);
                mk &= mk - 1;
                b->nl[tt * cap + cnt[tt]] = c;
                b->nv[tt * cap + cnt[tt]++] = row[tt];
            }
        }
#endif
        for (; t < n; t++) {  /* branch-free append */
            b->nl[t * cap + cnt[t]] = c;
            b->nv[t * cap + cnt[t]] = row[t];
            cnt[t] += row[t] != 0.0f;
        }
    }
}

static void multi_conv(const Model *m, const Layer *L, Batch *b, const Rows *rows,
                       int32_t layer, int32_t n_ch) {
    const int32_t K = m->conv_k, n = b->n, N = b->N;
    const int64_t cap = b->chans;
    int32_t *cnt = b->kept;
    nonzero_inputs(b, n_ch, cap, cnt);
    clear_flags(b->cact, n_ch);
    int32_t *proc = b->proc;
    float *acc_out = b->acc, *inv = b->inv;
    for (int32_t t = 0; t < n; t++) {
        /* gdn_layer's channels for this row: those with a nonzero input merged with its
           window list (both ascending) */
        float *conv = rows->convs[t][layer];
        int32_t *win = rows->wins[t][layer], *count = &rows->counts[t][layer];
        const int32_t *nl = b->nl + t * cap, n_new = cnt[t], n_win = *count;
        const float *nv = b->nv + t * cap;
        int32_t n_proc = 0, i = 0, j = 0;
        while (i < n_new || j < n_win) {
            const int32_t x = i < n_new ? nl[i] : INT32_MAX;
            const int32_t y = j < n_win ? win[j] : INT32_MAX;
            proc[n_proc] = x < y ? x : y;
            inv[n_proc++] = x <= y ? nv[i] : 0.0f;
            i += x <= y;
            j += y <= x;
        }
        for (int32_t k = 0; k < n_proc; k++) {  /* many independent misses in flight */
            __builtin_prefetch(conv + (int64_t)proc[k] * K, 1);
            __builtin_prefetch(L->conv_w + (int64_t)proc[k] * K, 0);
        }
        int32_t kept = 0;
        for (int32_t k = 0; k < n_proc; k++) {  /* gdn_layer's operations */
            const int32_t c = proc[k];
            float *st = conv + (int64_t)c * K;
            const float *w = L->conv_w + (int64_t)c * K;
            const float in = inv[k];
            float acc = 0.0f;
            int32_t any;
            if (K == 4) {
                const float s1 = st[1], s2 = st[2], s3 = st[3];
                acc += w[0] * s1;
                acc += w[1] * s2;
                acc += w[2] * s3;
                acc += w[3] * in;
                st[0] = s1;
                st[1] = s2;
                st[2] = s3;
                st[3] = in;
                any = (s1 != 0.0f) | (s2 != 0.0f) | (s3 != 0.0f) | (in != 0.0f);
            } else {
                for (int32_t q = 0; q < K - 1; q++) acc += w[q] * st[q + 1];
                acc += w[K - 1] * in;
                for (int32_t q = 0; q < K - 1; q++) st[q] = st[q + 1];
                st[K - 1] = in;
                any = 0;
                for (int32_t q = 0; q < K; q++) any |= st[q] != 0.0f;
            }
            acc_out[k] = acc;
            win[kept] = c;
            kept += any;
        }
        *count = kept;
        silu_array(acc_out, n_proc);
        /* into the rows of CT by channel: a row first written here is cleared for the
           other rows (+0: what the per-token kernel's skipped channels give) */
        for (int32_t k = 0; k < n_proc; k++) {
            const int32_t c = proc[k];
            float *out = b->CT + (int64_t)c * N;
            if (!b->cact[c]) {
                b->cact[c] = 1;
                memset(out, 0, sizeof(float) * N);
            }
            out[t] = acc_out[k];
        }
    }
}

/* One token of each of n sequences: tokens[t] is fed to sequence t, whose per-layer
   recurrent states, conv states, window lists and window counts are states[t][i],
   convs[t][i], wins[t][i], counts[t][i] (a plan's bindings, NativePlan). greedy[t]: the
   greedy next token of sequence t, -1 where the head's input is not finite (its
   residual stream is then in hs + t * hidden: the caller takes the argmax of its full
   logits). layers: the batched kernel's tables (fast_batch_plan). Returns 0, or -1 when
   the scratch cannot be allocated (nothing was run). */
int32_t qgpu_forward_multi(Model *m, float *const *const *states, float *const *const *convs,
                           int32_t *const *const *wins, int32_t *const *counts,
                           const int64_t *tokens, int32_t n, float *hs, int32_t *greedy,
                           const BatchLayer *layers) {
    phase(PH_SETUP);
    Batch *b = batch_start(m, tokens, n);
    if (!b) {
        phase(PH_END);
        return -1;
    }
    const Rows rows = {states, convs, wins, counts};
    for (int32_t i = 0; i < m->n_layers; i++) {
        const Layer *L = &m->layers[i];
        if (L->kind == 1 && L->n_heads)
            batch_gdn(m, L, &layers[i], b, NULL, NULL, NULL, NULL, &rows, i);
        if (L->n_units) batch_mlp(m, L, &layers[i], b);
    }
    phase(PH_HEAD);
    batch_head(m, b, hs, 0, greedy);
    phase(PH_END);
    return 0;
}
