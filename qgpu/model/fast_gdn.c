/* fast_gdn.c: #included by fast_kernel.c (one translation unit), after the pieces:
 * one Gated DeltaNet mixer layer for one token (projections, conv, delta rule, gated
 * norm, output projection). */

/* win/n_win: the channels whose conv window (state) holds a nonzero, ascending; kept with
   the state so that channels whose window and input are both zero are never visited */
static void gdn_layer(const Model *m, const Layer *L, float *S_all, float *conv, int32_t *win,
                      int32_t *n_win, Memo *mo) {
    const int32_t dk = m->dk, dv = m->dv, K = m->conv_k, nh = L->n_heads, nkh = L->n_key_heads;
    const int32_t n_qk = nkh * dk, n_ch = 2 * n_qk + nh * dv;
    /* slots and qkv are all zero on entry (the scratch is shared by every layer, whose
       channel counts differ): each layer clears all it wrote before it returns */
    MemoTable *t = memo_table(mo, m, L, 0);
    int way = -1;
    if (t) COUNT(C_KEY, t->n_key);
    if (t && memo_proj_lookup(mo, t, m, m->slots, &way) != MEMO_MISS) {
        COUNT(C_PROJ_REUSED, 1);
    } else {
        normalize(m, m->h, L->in_norm, m->x);
        csc_apply(&L->proj, m->x, m->slots, C_PROJ);
        if (t && way >= 0) memo_proj_store(t, way, m->slots, L->n_slots);
    }
    const int32_t n_new = nonzero_entries(m->slots, n_ch, m->newc);
    const int32_t n_proc = merge(m->newc, n_new, win, *n_win, m->proc);
    int32_t n_nz = 0, kept = 0;
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
    for (int32_t kh = 0; kh < nkh; kh++) m->nq[kh] = m->nk[kh] = 0;
    for (int32_t t = 0; t < n_nz && m->nzch[t] < 2 * n_qk; t++) {
        int32_t c = m->nzch[t];
        if (c < n_qk) { int32_t kh = c / dk; m->nzq[kh * dk + m->nq[kh]++] = c - kh * dk; }
        else { int32_t kh = (c - n_qk) / dk; m->nzk[kh * dk + m->nk[kh]++] = c - n_qk - kh * dk; }
    }
    for (int32_t kh = 0; kh < nkh; kh++) {
        l2norm_head(m->qkv + kh * dk, dk, m->sqrt_dk, m->qn + kh * dk, m->nzq + kh * dk, m->nq[kh]);
        l2norm_head(m->qkv + n_qk + kh * dk, dk, 1.0f, m->kn + kh * dk, m->nzk + kh * dk,
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
    const float *z = m->slots + n_ch, *bb = z + nh * dv, *aa = bb + nh;
    memset(m->mixed, 0, sizeof(float) * m->hidden);
    int any_out = 0;
    for (int32_t s = 0; s < nh; s++) {
        float *S = S_all + (int64_t)L->head_ids[s] * dk * dv;
        float a_in = aa[s] + L->dt_bias[s];
        float decay = np_expf(L->neg_exp_a_log[s] * softplus(a_in));
        if (decay != 1.0f) for (int64_t i = 0; i < (int64_t)dk * dv; i++) S[i] *= decay;
        const int32_t ks = L->key_slot[s];
        const float *v = m->qkv + 2 * n_qk + s * dv;
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
    for (int32_t t = 0; t < n_proc; t++) m->qkv[m->proc[t]] = 0.0f;
    memset(m->slots + n_ch, 0, sizeof(float) * (L->n_slots - n_ch));  /* z, b, a */
}
