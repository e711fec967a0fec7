/* fast_gdn.c: #included by fast_kernel.c (one translation unit), after the pieces:
 * one Gated DeltaNet mixer layer for one token (projections, conv, delta rule, gated
 * norm, output projection). */

/* Per state and GDN layer, what lets qgpu_forward_steady skip the conv channels whose
   window is steady. A conv channel's window is its last K inputs; when they all have the
   same bits v and the new input is v again, the shift leaves the window's bits as they
   are and the conv output is the one computed for that window before. So the kernel
   keeps, per channel, its newest input (last) and the output of its current window
   (out), and the channels whose window is not constant (moving); a token processes only
   the moving channels and those whose input's bits changed, each exactly as the plain
   path processes it (a channel the plain path leaves alone, input and window all 0, is
   left alone: out 0). The moving channels are a bitmap (bit c & 31 of word c >> 5); a
   channel outside it whose input did not change is not visited. The plain path's window
   lists are not kept meanwhile (NativePlan rebuilds them, and these tables from the conv
   state, when the other path runs next). */
typedef struct {
    float *last;       /* [n_ch] each channel's newest input */
    float *out;        /* [n_ch] the conv output (after silu) of each channel's window */
    uint32_t *moving;  /* [(n_ch + 31) / 32] the channels whose window is not constant */
    int32_t *n_moving; /* how many (information) */
} Steady;

/* the channels c < n whose input src[c] differs from last[c] in bits (last updated) or
   whose window is moving, ascending: a word of 32 channels at a time */
static int32_t steady_channels(const float *src, float *last, const uint32_t *moving,
                               int32_t n, int32_t *out) {
    int32_t k = 0, i = 0;
    for (; i + 32 <= n; i += 32) {
        const uint32_t changed = changed_mask32(src + i, last + i);
        if (changed) memcpy(last + i, src + i, 128);
        for (uint32_t all = changed | moving[i >> 5]; all; all &= all - 1)
            out[k++] = i + __builtin_ctz(all);
    }
    for (; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, src + i, 4);
        memcpy(&b, last + i, 4);
        if (a != b) last[i] = src[i];
        if (a != b || (moving[i >> 5] >> (i & 31) & 1)) out[k++] = i;
    }
    return k;
}

/* One listed channel of the steady path: returns 1 when it goes through silu (its
   conv output in *acc), 0 when its window and input are all +-0 (output 0, state as
   it is); *same: whether its window is constant after the token. K is a constant
   where the caller is specialised. */
static inline int conv_channel(float *st, const float *w, float in, int32_t K, float *acc,
                               int *same) {
    uint32_t b0, bj, any;
    memcpy(&b0, &in, 4);
    any = b0 & 0x7fffffffu;
    for (int32_t j = 0; j < K; j++) { memcpy(&bj, st + j, 4); any |= bj & 0x7fffffffu; }
    if (!any) {  /* the plain path does not visit it */
        int32_t s = 1;
        for (int32_t j = 0; j < K; j++) { memcpy(&bj, st + j, 4); s &= bj == b0; }
        *same = s;
        return 0;
    }
    float a = 0.0f;
    for (int32_t j = 0; j < K - 1; j++) a += w[j] * st[j + 1];
    a += w[K - 1] * in;
    for (int32_t j = 0; j < K - 1; j++) st[j] = st[j + 1];
    st[K - 1] = in;
    memcpy(&b0, st, 4);
    int32_t s = 1;
    for (int32_t j = 1; j < K; j++) { memcpy(&bj, st + j, 4); s &= bj == b0; }
    *same = s;
    *acc = a;
    return 1;
}

/* the steady path's conv: the listed channels (proc: moving or changed, ascending)
   shifted and their outputs computed into sd->out, the moving bitmap rewritten (every
   channel moving before is listed; a word without listed channels stays 0); returns
   the channels processed. proc is overwritten with the channels whose output goes
   through silu (in acc_out's order). */
#define CONV_STEADY_LOOP(KK)                                                               \
    for (int32_t t = 0; t < n_proc; t++) {                                                \
        const int32_t c = proc[t];                                                        \
        if ((c >> 5) != word) {                                                           \
            if (word >= 0) mv[word] = bits;                                               \
            word = c >> 5;                                                                \
            bits = 0;                                                                     \
        }                                                                                 \
        float acc = 0.0f;                                                                 \
        int same;                                                                         \
        const int on = conv_channel(conv + (int64_t)c * (KK), L->conv_w + (int64_t)c * (KK), \
                                    last[c], (KK), &acc, &same);                          \
        bits |= (uint32_t)!same << (c & 31);                                              \
        moving += !same;                                                                  \
        if (!on) { sd->out[c] = 0.0f; continue; }                                         \
        acc_out[done] = acc;                                                              \
        proc[done++] = c;                                                                 \
    }

static int32_t conv_steady(const Layer *L, const Steady *sd, float *conv, int32_t K,
                           int32_t *proc, int32_t n_proc, float *acc_out) {
    int32_t done = 0, moving = 0, word = -1;
    uint32_t bits = 0, *mv = sd->moving;
    const float *last = sd->last;
    for (int32_t t = 0; t < n_proc; t++)  /* many independent misses in flight */
        __builtin_prefetch(conv + (int64_t)proc[t] * K, 1);
    if (K == 4) CONV_STEADY_LOOP(4)  /* Qwen3.5's kernel size: the same operations */
    else CONV_STEADY_LOOP(K)
    if (word >= 0) mv[word] = bits;
    *sd->n_moving = moving;
    return done;
}

static void gdn_layer(const Model *m, const Layer *L, float *S_all, float *conv, int32_t *win,
                      int32_t *n_win, Memo *mo, const Steady *sd) {
    const int32_t dk = m->dk, dv = m->dv, K = m->conv_k, nh = L->n_heads, nkh = L->n_key_heads;
    const int32_t n_qk = nkh * dk, n_ch = 2 * n_qk + nh * dv;
    /* slots and qkv are all zero on entry (the scratch is shared by every layer, whose
       channel counts differ): each layer clears all it wrote before it returns */
    MemoTable *t = memo_table(mo, m, L, 0);
    int way = -1;
    const float *src = NULL;  /* the projection's slots: a stored row, else the scratch's */
    if (t) {
        COUNT(C_KEY, t->n_key);
        src = memo_proj_lookup(mo, t, m, &way);
    }
    if (src) {
        COUNT(C_PROJ_REUSED, 1);
    } else {
        normalize(m, m->h, L->in_norm, m->x);
        csc_apply(&L->proj, m->x, m->slots, C_PROJ);
        if (t && way >= 0) memo_proj_store(t, way, m->slots);
        src = m->slots;
    }
    if (!sd && src != m->slots) memcpy(m->slots, src, sizeof(float) * L->n_slots);
    float *qkv = m->qkv;
    int32_t n_nz = 0, n_new = 0, n_proc = 0;
    if (sd) {  /* the steady path: moving channels and changed inputs only */
        n_proc = steady_channels(src, sd->last, sd->moving, n_ch, m->proc);
        const int32_t done = conv_steady(L, sd, conv, m->conv_k, m->proc, n_proc, m->conv_out);
        COUNT(C_CONV, done);
        silu_array(m->conv_out, done);
        for (int32_t t = 0; t < done; t++) sd->out[m->proc[t]] = m->conv_out[t];
        qkv = sd->out;
        n_nz = nonzero_entries(qkv, 2 * n_qk, m->nzch);
        goto heads;
    }
    n_new = nonzero_entries(m->slots, n_ch, m->newc);
    n_proc = merge(m->newc, n_new, win, *n_win, m->proc);
    int32_t kept = 0;
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
heads:
    for (int32_t kh = 0; kh < nkh; kh++) m->nq[kh] = m->nk[kh] = 0;
    for (int32_t t = 0; t < n_nz && m->nzch[t] < 2 * n_qk; t++) {
        int32_t c = m->nzch[t];
        if (c < n_qk) { int32_t kh = c / dk; m->nzq[kh * dk + m->nq[kh]++] = c - kh * dk; }
        else { int32_t kh = (c - n_qk) / dk; m->nzk[kh * dk + m->nk[kh]++] = c - n_qk - kh * dk; }
    }
    for (int32_t kh = 0; kh < nkh; kh++) {
        l2norm_head(qkv + kh * dk, dk, m->sqrt_dk, m->qn + kh * dk, m->nzq + kh * dk, m->nq[kh]);
        l2norm_head(qkv + n_qk + kh * dk, dk, 1.0f, m->kn + kh * dk, m->nzk + kh * dk,
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
    const float *z = (sd ? src : m->slots) + n_ch, *bb = z + nh * dv, *aa = bb + nh;
    memset(m->mixed, 0, sizeof(float) * m->hidden);
    int any_out = 0;
    for (int32_t s = 0; s < nh; s++) {
        float *S = S_all + (int64_t)L->head_ids[s] * dk * dv;
        float a_in = aa[s] + L->dt_bias[s];
        float decay = np_expf(L->neg_exp_a_log[s] * softplus(a_in));
        if (decay != 1.0f) for (int64_t i = 0; i < (int64_t)dk * dv; i++) S[i] *= decay;
        const int32_t ks = L->key_slot[s];
        const float *v = qkv + 2 * n_qk + s * dv;
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
    if (sd) {  /* the scratch's slots were written only when computed */
        if (src == m->slots) memset(m->slots, 0, sizeof(float) * L->n_slots);
        return;
    }
    for (int32_t t = 0; t < n_proc; t++) m->qkv[m->proc[t]] = 0.0f;
    memset(m->slots + n_ch, 0, sizeof(float) * (L->n_slots - n_ch));  /* z, b, a */
}
