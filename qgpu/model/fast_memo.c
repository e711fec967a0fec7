/* fast_memo.c: #included by fast_kernel.c (one translation unit), after the pieces and
 * before qgpu_forward: exact reuse of a layer part's result when its input repeats.
 *
 * Two parts of a layer are pure functions of the residual stream h entering them:
 * - a GDN layer's projection: slots = proj . x with x = (h * r) * in_norm, r the norm's
 *   scale, over the columns proj reads (conv, delta rule and read follow, which depend
 *   on the state, and always run);
 * - an MLP: its additions to h (mixed at down_rows) are a function of x = (h * r) *
 *   post_norm over the columns the gate forms, the bias input and up read.
 * The machine's tokens come in few kinds and its signals take few values, so these
 * inputs repeat: on the loop benchmark ~93% of the projections' and ~90% of the MLPs'
 * inputs equal one of the last 32 seen by that layer. A table per layer part keeps the
 * last MEMO_WAYS inputs (the key: r and h at the columns read, as bits) with the result
 * the kernel computed from them; a lookup compares the whole key bit for bit (the hash
 * only picks the candidate), so a hit stands for the same float32 operations on the same
 * operands and gives the same bits (a +0/-0 or NaN difference is a different key). The
 * kernel then copies the stored result instead of recomputing it: projection slots are
 * read from the table (the steady path) or copied to the scratch, MLP rows added into h
 * as mlp_down_part adds mixed into h.
 *
 * The tables belong to a plan's scratch (qgpu_memo_new, freed with the plan:
 * qgpu_memo_free): threads stepping at once each have their own (NativePlan._scratch);
 * a call that finds its tables locked by another thread runs without them. qgpu_set_memo(0) turns reuse off (the benchmark's before). */

#define MEMO_WAYS 32

typedef struct {
    int32_t n_key;        /* key floats: r, then h at key_cols (-1: not built yet) */
    int32_t *key_cols;
    int32_t n_out;        /* MLP: n_down_rows; projection: n_slots */
    uint64_t hash[MEMO_WAYS];   /* 0: empty way */
    uint32_t stamp[MEMO_WAYS];  /* last use (LRU replacement) */
    uint32_t *keys;       /* [MEMO_WAYS * n_key] */
    float *outs;          /* [MEMO_WAYS * n_out] */
    int mru;              /* the way last found or claimed (-1: none) */
    int32_t n_runs;       /* MLP: down_rows as runs of consecutive rows */
    int32_t *run_start, *run_len;
} MemoTable;

typedef struct {
    int32_t n_layers;
    uint32_t clock;
    pthread_mutex_t lock;
    MemoTable *proj, *mlp;  /* [n_layers] */
    uint32_t *kbuf;         /* the key being looked up */
    int32_t kbuf_size;
} Memo;

static int memo_on = 1;

void qgpu_set_memo(int on) { memo_on = on; }

void *qgpu_memo_new(int32_t n_layers) {
    Memo *mo = calloc(1, sizeof(Memo));
    if (!mo) return NULL;
    mo->n_layers = n_layers;
    mo->proj = calloc((size_t)n_layers, sizeof(MemoTable));
    mo->mlp = calloc((size_t)n_layers, sizeof(MemoTable));
    if (!mo->proj || !mo->mlp) { free(mo->proj); free(mo->mlp); free(mo); return NULL; }
    for (int32_t i = 0; i < n_layers; i++) mo->proj[i].n_key = mo->mlp[i].n_key = -1;
    pthread_mutex_init(&mo->lock, NULL);
    return mo;
}

static void memo_table_free(MemoTable *t) {
    free(t->key_cols); free(t->keys); free(t->outs); free(t->run_start); free(t->run_len);
}

void qgpu_memo_free(void *p) {
    Memo *mo = p;
    if (!mo) return;
    for (int32_t i = 0; i < mo->n_layers; i++) {
        memo_table_free(&mo->proj[i]);
        memo_table_free(&mo->mlp[i]);
    }
    free(mo->proj); free(mo->mlp); free(mo->kbuf);
    pthread_mutex_destroy(&mo->lock);
    free(mo);
}

/* the ascending distinct values of a[0..n) below `limit` (a bitmap pass) */
static int32_t distinct_below(const int32_t *a, int64_t n, int32_t limit, uint8_t *seen,
                              int32_t *out) {
    for (int64_t p = 0; p < n; p++) seen[a[p]] = 1;
    int32_t k = 0;
    for (int32_t c = 0; c < limit; c++) if (seen[c]) { out[k++] = c; seen[c] = 0; }
    return k;
}

/* the table's key columns and result size, and its storage; 0 when allocation failed
   (the part then runs without reuse) */
static int memo_build(Memo *mo, MemoTable *t, const Model *m, const Layer *L, int mlp) {
    const int32_t H = m->hidden;
    uint8_t *seen = calloc((size_t)H + 1, 1);
    int32_t *cols = malloc(sizeof(int32_t) * ((size_t)H + 1));
    if (!seen || !cols) { free(seen); free(cols); return 0; }
    int32_t n;
    if (mlp) {
        for (int32_t c = 0; c < L->gate.n_cols; c++) seen[L->gate.col[c]] = 1;
        for (int32_t c = 0; c < L->gate_hi.n_cols; c++) seen[L->gate_hi.col[c]] = 1;
        if (L->bias_col >= 0) seen[L->bias_col] = 1;
        for (int32_t u = 0; u < L->n_single; u++) seen[L->up1_col[u]] = 1;
        n = distinct_below(L->up_col, L->up_ptr[L->n_units], H, seen, cols);
        t->n_out = L->n_down_rows;
        t->run_start = malloc(sizeof(int32_t) * ((size_t)t->n_out + 1));
        t->run_len = malloc(sizeof(int32_t) * ((size_t)t->n_out + 1));
        if (!t->run_start || !t->run_len) {
            free(seen); free(cols);
            t->n_key = 0;  /* never looked up again */
            return 0;
        }
        t->n_runs = 0;
        for (int32_t j = 0; j < t->n_out; j++) {  /* rows ascending: runs of +1 steps */
            if (j && L->down_rows[j] == L->down_rows[j - 1] + 1) {
                t->run_len[t->n_runs - 1]++;
                continue;
            }
            t->run_start[t->n_runs] = L->down_rows[j];
            t->run_len[t->n_runs++] = 1;
        }
    } else {
        n = distinct_below(L->proj.col, L->proj.n_cols, H, seen, cols);
        t->n_out = L->n_slots;
    }
    free(seen);
    t->key_cols = cols;
    t->n_key = n + 1;
    t->keys = malloc(sizeof(uint32_t) * (size_t)MEMO_WAYS * t->n_key);
    t->outs = malloc(sizeof(float) * ((size_t)MEMO_WAYS * t->n_out + 1));
    if (t->n_key > mo->kbuf_size) {
        free(mo->kbuf);
        mo->kbuf = malloc(sizeof(uint32_t) * (size_t)t->n_key);
        mo->kbuf_size = mo->kbuf ? t->n_key : 0;
    }
    if (!t->keys || !t->outs || !mo->kbuf) {
        t->n_key = 0;  /* never looked up again */
        return 0;
    }
    memset(t->hash, 0, sizeof t->hash);
    t->mru = -1;
    return 1;
}

/* Whether h's key for table t (r's bits, then h's at the key columns) is the one stored
   in way w, read straight from h: the way found last is tried first (more than half the
   hits on the loop benchmark), without gathering or hashing the key; a different r, or
   the first block of 16 key columns that differs, ends it. */
static int memo_same(const MemoTable *t, int w, const float *h, float r) {
    const uint32_t *k = t->keys + (size_t)w * t->n_key;
    uint32_t rb;
    memcpy(&rb, &r, 4);
    if (k[0] != rb) return 0;
    k++;
    const int32_t *cols = t->key_cols;
    const int32_t n = t->n_key - 1;
    int32_t j = 0;
    for (; j + 16 <= n; j += 16) {
        uint32_t d = 0;
        for (int32_t q = 0; q < 16; q++) {
            uint32_t b;
            memcpy(&b, h + cols[j + q], 4);
            d |= b ^ k[j + q];
        }
        if (d) return 0;
    }
    uint32_t d = 0;
    for (; j < n; j++) {
        uint32_t b;
        memcpy(&b, h + cols[j], 4);
        d |= b ^ k[j];
    }
    return !d;
}

/* The key of h for table t (r's bits, then h's at the key columns) into mo->kbuf, and
   its hash (never 0). */
static uint64_t memo_key(const Memo *mo, const MemoTable *t, const float *h, float r) {
    uint32_t *k = mo->kbuf;
    memcpy(k, &r, 4);
    const int32_t *cols = t->key_cols;
    const int32_t n = t->n_key - 1;
    for (int32_t j = 0; j < n; j++) memcpy(k + 1 + j, h + cols[j], 4);
    /* four independent multiply-xor lanes (a hash only picks the way to compare) */
    uint64_t a[4] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                     0x27d4eb2f165667c5ull};
    int32_t j = 0;
    for (; j + 4 <= t->n_key; j += 4)
        for (int q = 0; q < 4; q++) a[q] = (a[q] ^ k[j + q]) * 0xff51afd7ed558ccdull;
    for (; j < t->n_key; j++) a[0] = (a[0] ^ k[j]) * 0xc4ceb9fe1a85ec53ull;
    uint64_t hv = a[0] ^ (a[1] >> 7) ^ (a[2] << 11) ^ (a[3] >> 19);
    hv ^= hv >> 33;
    return hv ? hv : 1;
}

/* the way holding mo->kbuf (same hash, same bits), or -1 */
static int memo_find(Memo *mo, MemoTable *t, uint64_t hv) {
    for (int w = 0; w < MEMO_WAYS; w++)
        if (t->hash[w] == hv
            && !memcmp(t->keys + (size_t)w * t->n_key, mo->kbuf, sizeof(uint32_t) * t->n_key)) {
            t->stamp[w] = ++mo->clock;
            t->mru = w;
            return w;
        }
    return -1;
}

/* a way for a new key (empty, else the least recently used), with the key stored */
static int memo_claim(Memo *mo, MemoTable *t, uint64_t hv) {
    int best = 0;
    for (int w = 0; w < MEMO_WAYS; w++) {
        if (!t->hash[w]) { best = w; break; }
        if (t->stamp[w] < t->stamp[best]) best = w;
    }
    t->hash[best] = hv;
    t->mru = best;
    t->stamp[best] = ++mo->clock;
    memcpy(t->keys + (size_t)best * t->n_key, mo->kbuf, sizeof(uint32_t) * t->n_key);
    return best;
}

/* The table of layer L's part, built on first use; NULL when reuse is off for it. */
static MemoTable *memo_table(Memo *mo, const Model *m, const Layer *L, int mlp) {
    if (!mo) return NULL;
    MemoTable *t = (mlp ? mo->mlp : mo->proj) + (L - m->layers);
    if (t->n_key < 0 && !memo_build(mo, t, m, L, mlp)) return NULL;
    return t->n_key > 0 ? t : NULL;
}

enum { MEMO_MISS = -1 };

/* The way holding h's key (the last way found first), or -1 with *way the way claimed
   for it */
static int memo_lookup(Memo *mo, MemoTable *t, const Model *m, int *way) {
    const float r = norm_scale(m, m->h);
    if (t->mru >= 0 && memo_same(t, t->mru, m->h, r)) {
        t->stamp[t->mru] = ++mo->clock;
        return t->mru;
    }
    const uint64_t hv = memo_key(mo, t, m->h, r);
    const int w = memo_find(mo, t, hv);
    if (w < 0) *way = memo_claim(mo, t, hv);
    return w;
}

/* The projection's slots for h (n_slots floats) from the table, or NULL on a miss with
   *way the way claimed for memo_proj_store */
static const float *memo_proj_lookup(Memo *mo, MemoTable *t, const Model *m, int *way) {
    const int w = memo_lookup(mo, t, m, way);
    if (w < 0) return NULL;
    return t->outs + (size_t)w * t->n_out;
}

static void memo_proj_store(MemoTable *t, int w, const float *slots) {
    memcpy(t->outs + (size_t)w * t->n_out, slots, sizeof(float) * t->n_out);
}

/* The MLP's additions to h: added from the table on a hit (returns the way); on a miss
   MEMO_MISS with *way claimed for memo_mlp_store */
static int memo_mlp_lookup(Memo *mo, MemoTable *t, const Model *m, const Layer *L,
                           int *way) {
    const int w = memo_lookup(mo, t, m, way);
    if (w < 0) return MEMO_MISS;
    const float *val = t->outs + (size_t)w * t->n_out;
    (void)L;
    for (int32_t r = 0; r < t->n_runs; r++) {  /* the rows in order, a run at a time */
        float *restrict h = m->h + t->run_start[r];
        const int32_t len = t->run_len[r];
        for (int32_t j = 0; j < len; j++) h[j] += val[j];
        val += len;
    }
    return w;
}

static void memo_mlp_store(MemoTable *t, int w, const Model *m, const Layer *L) {
    float *val = t->outs + (size_t)w * t->n_out;
    const int32_t *rows = L->down_rows;
    for (int32_t j = 0; j < t->n_out; j++) val[j] = m->mixed[rows[j]];
}
