/* fast_multi.c: #included by fast_batch.c (one translation unit): one generation step of
 * n independent sequences at once (`qgpu_forward_multi`): row t of the batch is the next
 * token of sequence t, with its own recurrent and conv states, so every layer's weights
 * are read once per step for all of them.
 *
 * Everything but the mixer's state is the batched kernel's (fast_batch.c), whose rows
 * need not be positions of one sequence: norms, products, the MLP and the head compute
 * each row from that row's inputs alone, with the per-token kernel's operations in its
 * order. What differs is what carries state between tokens:
 * - the conv (lanes_conv): the sequences' conv states side by side, lane t of a
 *   layer's store [channel][K][lane] being row t's window (model.fast_multi.LaneStore
 *   moves a state in when it joins and back when it leaves), so that a channel's
 *   windows of all rows are one contiguous run (one sequence's conv state per row,
 *   ~1 MB each, was 44% of a step at 64 rows in cache misses). A channel is visited
 *   when a lane's input or window holds a nonzero; lane by lane it runs gdn_layer's
 *   operations where that lane's input or window holds a nonzero, and leaves the lane's
 *   window as it is with output +0 where not (what the per-token kernel does with a
 *   channel it skips);
 * - the delta rule reads and writes each row's own recurrent state (batch_gdn with
 *   `Rows`): the per-token kernel's code on that row's values.
 * tests/model/test_fast_multi.py compares tokens and states with one-at-a-time steps on
 * random models whose sums are not exact, with sequences joining and leaving.
 */

/* one layer's conv for the n rows from the lane store (see the top); flags[c]: some
   lane's window of channel c holds a nonzero (kept here; a superset is harmless) */
static void lanes_conv(const Model *m, const Layer *L, Batch *b, const Rows *rows,
                       int32_t layer, int32_t n_ch) {
    const int32_t K = m->conv_k, n = b->n, N = b->N;
    const int64_t P = rows->pitch;
    float *store = rows->stores[layer];
    uint8_t *flag = rows->flags[layer];
    for (int32_t c = 0; c < n_ch; c++) {
        const float *in = b->ST + (int64_t)c * N;
        const int32_t has_in = b->stt[c];  /* not written: +0 at every row */
        int32_t live = flag[c];
        if (!live && has_in)
            for (int32_t t = 0; t < n; t++) live |= in[t] != 0.0f;
        if (!live) {
            b->cact[c] = 0;
            continue;
        }
        b->cact[c] = 1;
        float *st = store + (int64_t)c * K * P, *out = b->CT + (int64_t)c * N;
        const float *w = L->conv_w + (int64_t)c * K;
        int32_t keep = 0;
        if (K == 4) {  /* Qwen3.5's kernel size: gdn_layer's unrolled operations, lane-wise */
            float *s0 = st, *s1 = st + P, *s2 = st + 2 * P, *s3 = st + 3 * P;
            const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
            for (int32_t t = 0; t < n; t++) {
                const float x = has_in ? in[t] : 0.0f;
                const float a0 = s0[t], a1 = s1[t], a2 = s2[t], a3 = s3[t];
                const int32_t next = (a1 != 0.0f) | (a2 != 0.0f) | (a3 != 0.0f) | (x != 0.0f);
                const int32_t act = next | (a0 != 0.0f);
                float acc = 0.0f;
                acc += w0 * a1;
                acc += w1 * a2;
                acc += w2 * a3;
                acc += w3 * x;
                out[t] = act ? acc : 0.0f;
                s0[t] = act ? a1 : a0;
                s1[t] = act ? a2 : a1;
                s2[t] = act ? a3 : a2;
                s3[t] = act ? x : a3;
                keep |= next;
            }
        } else {
            for (int32_t t = 0; t < n; t++) {
                const float x = has_in ? in[t] : 0.0f;
                int32_t act = x != 0.0f;
                for (int32_t j = 0; j < K; j++) act |= st[j * P + t] != 0.0f;
                if (!act) {
                    out[t] = 0.0f;
                    continue;
                }
                float acc = 0.0f;
                for (int32_t j = 0; j < K - 1; j++) acc += w[j] * st[(j + 1) * P + t];
                acc += w[K - 1] * x;
                for (int32_t j = 0; j < K - 1; j++) st[j * P + t] = st[(j + 1) * P + t];
                st[(K - 1) * P + t] = x;
                for (int32_t j = 0; j < K; j++) keep |= st[j * P + t] != 0.0f;
                out[t] = acc;
            }
        }
        flag[c] = (uint8_t)keep;
        silu_array(out, n);
    }
}

/* One token of each of n sequences: tokens[t] is fed to sequence t, whose per-layer
   recurrent states are states[t][i] (a plan's bindings, NativePlan) and whose conv
   windows are lane t of stores[i] ([n_ch][K][pitch]; flags[i]: its channels whose
   window is not 0 in some lane; model.fast_multi.LaneStore). greedy[t]: the
   greedy next token of sequence t, -1 where the head's input is not finite (its
   residual stream is then in hs + t * hidden: the caller takes the argmax of its full
   logits). layers: the batched kernel's tables (fast_batch_plan). Returns 0, or -1 when
   the scratch cannot be allocated (nothing was run). */
int32_t qgpu_forward_multi(Model *m, float *const *const *states, float *const *stores,
                           uint8_t *const *flags, int32_t pitch, const int64_t *tokens,
                           int32_t n, float *hs, int32_t *greedy, const BatchLayer *layers) {
    phase(PH_SETUP);
    Batch *b = batch_start(m, tokens, n);
    if (!b) {
        phase(PH_END);
        return -1;
    }
    const Rows rows = {states, stores, flags, pitch};
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
