/* fast_head.c: #included by fast_kernel.c (one translation unit), after the layout:
 * the output head's argmax over bounded groups of rows. */

/* --- output head --- */

static inline float head_row(const Head *hd, int32_t r, const float *x) {
    float acc = 0.0f;
    for (int32_t p = hd->ptr[r]; p < hd->ptr[r + 1]; p++) acc += hd->val[p] * x[hd->col[p]];
    return acc;
}

static void bound(const int32_t *cols, const float *mx, const float *mn, int32_t a, int32_t b,
                  const float *x, double *ub, double *mag) {
    double u = 0.0, g = 0.0;
    for (int32_t p = a; p < b; p++) {
        double xv = x[cols[p]];
        double hi = mx[p] * xv, lo = mn[p] * xv;
        u += hi > lo ? hi : lo;
        g += fabs(hi) > fabs(lo) ? fabs(hi) : fabs(lo);
    }
    *ub = u;
    *mag = g;
}

/* argmax of the head's logits (first index on ties, as np.argmax), without computing
   rows whose block bound proves them below the best value found */
static int32_t head_argmax_in(const Model *m, const float *x, double *group_ub,
                              int32_t *group_order);

static int32_t head_argmax(const Model *m, const float *x) {
    return head_argmax_in(m, x, m->group_ub, m->group_order);
}

/* head_argmax with the caller's scratch (n_groups each) */
static int32_t head_argmax_in(const Model *m, const float *x, double *group_ub,
                              int32_t *group_order) {
    const Head *hd = &m->head;
    float best = -INFINITY;
    int32_t best_id = INT32_MAX;
    if (hd->first_zero_row >= 0) { best = 0.0f; best_id = hd->first_zero_row; }
    const double slack = (hd->max_row_nnz + 4) * 0x1p-23, tiny = 1e-30;
    double xmax = 0.0;
    for (int32_t t = 0; t < hd->n_head_cols; t++) {
        double a = fabs((double)x[hd->head_cols[t]]);
        if (!(a <= xmax)) xmax = a;  /* NaN propagates */
    }
    if (!isfinite(xmax)) return -1;
    for (int32_t g = 0; g < hd->n_groups; g++) {
        double ub, mag, l1 = hd->group_l1[g] * xmax;
        bound(hd->group_col, hd->group_max, hd->group_min, hd->group_ptr[g], hd->group_ptr[g + 1],
              x, &ub, &mag);
        ub = ub + mag * slack + tiny;
        l1 = l1 + l1 * slack + tiny;
        group_ub[g] = ub < l1 ? ub : l1;
        group_order[g] = g;
    }
    for (int32_t i = 1; i < hd->n_groups; i++) {  /* groups by decreasing bound */
        int32_t g = group_order[i], j = i;
        while (j > 0 && group_ub[group_order[j - 1]] < group_ub[g]) {
            group_order[j] = group_order[j - 1];
            j--;
        }
        group_order[j] = g;
    }
    for (int32_t i = 0; i < hd->n_groups; i++) {
        int32_t g = group_order[i];
        if (group_ub[g] < (double)best) break;
        for (int32_t b = hd->group_block[g]; b < hd->group_block[g + 1]; b++) {
            double ub, mag, l1 = hd->block_l1[b] * xmax;
            if (l1 + l1 * slack + tiny < (double)best) continue;
            bound(hd->block_col, hd->block_max, hd->block_min, hd->block_ptr[b],
                  hd->block_ptr[b + 1], x, &ub, &mag);
            if (ub + mag * slack + tiny < (double)best) continue;
            int32_t end = (b + 1) * hd->block_rows;
            if (end > hd->n_rows) end = hd->n_rows;
            for (int32_t r = b * hd->block_rows; r < end; r++) {
                float v = head_row(hd, r, x);
                COUNT(C_HEAD_ROWS, 1);
                if (v != v) return -1;  /* NaN: np.argmax picks the first NaN */
                int32_t id = hd->row_ids[r];
                if (v > best || (v == best && id < best_id)) { best = v; best_id = id; }
            }
        }
    }
    return best_id;
}
