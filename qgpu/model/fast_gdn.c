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
   left alone: out 0). The plain path's window lists are not kept meanwhile
   (NativePlan rebuilds them, and these tables from the conv state, when the other path
   runs next). */
typedef struct {
    float *last;       /* [n_ch] each channel's newest input */
    float *out;        /* [n_ch] the conv output (after silu) of each channel's window */
    int32_t *moving;   /* channels whose window is not constant (bits), ascending */
    int32_t *n_moving;
} Steady;

/* the channels c < n whose slots[c] differs from last[c] in bits, ascending, with
   last[c] updated; blocks of 8 equal ones skipped fast */
static int32_t changed_entries(const float *slots, float *last, int32_t n, int32_t *out) {
    int32_t k = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        v8u a, b;
        memcpy(&a, slots + i, 32);
        memcpy(&b, last + i, 32);
        const v8u d = a ^ b;
        if (d[0] | d[1] | d[2] | d[3] | d[4] | d[5] | d[6] | d[7]) {
            for (int32_t j = 0; j < 8; j++) {
                out[k] = i + j;
                k += d[j] != 0;
            }
            memcpy(last + i, &a, 32);
        }
    }
    for (; i < n; i++) {
        uint32_t a, b;
        memcpy(&a, slots + i, 4);
        memcpy(&b, last + i, 4);
        if (a != b) { out[k++] = i; last[i] = slots[i]; }
    }
    return k;
}

/* the steady path's conv: the listed channels (proc: moving or changed) shifted and
   their outputs computed into sd->out; returns the channels processed. proc is
   overwritten with the channels whose output goes through silu (in acc_out's order). */
static int32_t conv_steady(const Layer *L, const Steady *sd, float *conv, int32_t K,
                           int32_t *proc, int32_t n_proc, float *acc_out) {
    int32_t done = 0, moving = 0;
    const float *last = sd->last;
    for (int32_t t = 0; t < n_proc; t++)  /* many independent misses in flight */
        __builtin_prefetch(conv + (int64_t)proc[t] * K, 1);
    for (int32_t t = 0; t < n_proc; t++) {
        const int32_t c = proc[t];
        float *st = conv + (int64_t)c * K;
        const float *w = L->conv_w + (int64_t)c * K;
        const float in = last[c];
        int32_t any = in != 0.0f;
        for (int32_t j = 0; j < K; j++) any |= st[j] != 0.0f;
        if (!any) {  /* the plain path does not visit it: state as it is, output 0 */
            sd->out[c] = 0.0f;
            uint32_t b0, bj;
            memcpy(&b0, &in, 4);
            int32_t same = 1;
            for (int32_t j = 0; j < K; j++) { memcpy(&bj, st + j, 4); same &= bj == b0; }
            sd->moving[moving] = c;
            moving += !same;
            continue;
        }
        float acc = 0.0f;
        for (int32_t j = 0; j < K - 1; j++) acc += w[j] * st[j + 1];
        acc += w[K - 1] * in;
        for (int32_t j = 0; j < K - 1; j++) st[j] = st[j + 1];
        st[K - 1] = in;
        uint32_t b0, bj;
        memcpy(&b0, st, 4);
        int32_t same = 1;
        for (int32_t j = 1; j < K; j++) { memcpy(&bj, st + j, 4); same &= bj == b0; }
        sd->moving[moving] = c;
        moving += !same;
        acc_out[done] = acc;
        proc[done++] = c;
    }
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
        n_new = changed_entries(src, sd->last, n_ch, m->newc);
        n_proc = merge(m->newc, n_new, sd->moving, *sd->n_moving, m->proc);
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
