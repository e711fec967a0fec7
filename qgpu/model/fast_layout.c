/* fast_layout.c: #included by fast_kernel.c (one translation unit): the model's data
 * layout and qgpu_layout(), which fast_native.check_layout compares with its ctypes
 * Structures. */

/* --- model layout (mirrored by ctypes Structures in fast_native.py) --- */

typedef struct {          /* columns of a sparse matrix; rows ascending within a column */
    int32_t n_cols;
    const int32_t *col;   /* [n_cols] input index of each column */
    const int32_t *ptr;   /* [n_cols + 1] */
    const int32_t *row;   /* [nnz] output index */
    const float *val;     /* [nnz] */
} Csc;

typedef struct {
    int32_t kind;                 /* 0: the mixer adds nothing; 1: Gated DeltaNet */
    const float *in_norm;         /* [H] 1 + w */
    const float *post_norm;       /* [H] 1 + w */
    /* Gated DeltaNet: projection slots q [nk*dk], k [nk*dk], v [nh*dv], z [nh*dv], b, a */
    int32_t n_heads, n_key_heads, n_slots;
    const int32_t *head_ids;      /* [nh] value head index in the state */
    const int32_t *key_slot;      /* [nh] live key head serving each live value head */
    Csc proj;                     /* input: x (hidden); output: slots */
    int32_t n_active;             /* conv channels with a nonzero projection row */
    const int32_t *active;
    const float *conv_w;          /* [n_channels, K] */
    const float *neg_exp_a_log;   /* [nh] -exp(A_log) */
    const float *dt_bias;         /* [nh] */
    const float *norm_w;          /* [dv] */
    Csc out;                      /* one column per y slot (nh*dv); output: hidden */
    int32_t n_out_rows;
    const int32_t *out_rows;
    /* SwiGLU MLP over its live units. Units whose gate rows agree except in column
       bias_col share a form: gate[u] = form[unit_form[u]] + unit_bias[u] * u[bias_col] */
    int32_t n_units, n_forms, bias_col;
    Csc gate;                     /* input: u (hidden); output: forms */
    const int32_t *unit_form;
    const float *unit_bias;
    const int32_t *up_ptr;        /* CSR rows of up_proj, one per unit */
    const int32_t *up_col;
    const float *up_val;
    Csc down;                     /* one column per unit; output: hidden */
    int32_t n_down_rows;
    const int32_t *down_rows;
    Csc gate_hi, down_hi;         /* the parts for the second thread: forms rows from
                                     form_split, down (hidden) rows from down_rows[down_row_split] */
    int32_t form_split, down_row_split;
    int32_t n_single;             /* units [0, n_single) have 1 up entry: */
    const int32_t *up1_col;       /* [n_single] */
    const float *up1_val;
    const int32_t *form_ptr;      /* [n_forms + 1] each form's units in form_unit: */
    const int32_t *form_unit;     /* [n_units] by ascending bias (then unit) */
    const float *form_bias;       /* [n_units] their unit_bias */
    const float *form_bias_max, *form_bias_min;  /* [n_forms] each form's largest, smallest */
} Layer;

typedef struct {
    int32_t n_rows;               /* nonzero rows of the output head */
    const int32_t *row_ids;       /* [n_rows] vocabulary index, ascending */
    const int32_t *ptr, *col;     /* CSR */
    const float *val;
    int32_t first_zero_row;       /* smallest all-zero row (logit exactly 0), or -1 */
    int32_t max_row_nnz;
    int32_t n_head_cols;          /* columns any row uses */
    const int32_t *head_cols;
    const float *group_l1, *block_l1; /* max over the rows of sum |w| */
    /* bounds for argmax: level 1 groups of rows, each made of level 2 blocks */
    int32_t n_groups, block_rows;
    const int32_t *group_block;   /* [n_groups + 1] first block of each group */
    const int32_t *group_ptr;     /* [n_groups + 1] into group_col/max/min */
    const int32_t *group_col;
    const float *group_max, *group_min;
    const int32_t *block_ptr;     /* [n_blocks + 1] */
    const int32_t *block_col;
    const float *block_max, *block_min;
} Head;

typedef struct {
    int32_t hidden, n_layers, conv_k, dk, dv;
    float eps, sqrt_dk;
    const int32_t *embed_ptr;     /* [vocab + 1] CSR rows of the embedding */
    const int32_t *embed_col;     /* every entry whose bits are not 0 (-0.0 kept) */
    const float *embed_val;
    const float *final_norm;      /* [H] 1 + w */
    const Layer *layers;
    Head head;
    /* scratch, sized by the planner */
    float *h, *x, *mixed, *slots, *qkv, *qn, *kn, *o, *y, *units, *forms, *head_x;
    int32_t *nzq, *nzk, *nq, *nk, *nzch, *newc, *proc, *unit_list, *group_order;
    double *group_ub;
    float *conv_out, *acts;
    float *x2;                    /* the second thread's norm output */
    int32_t *unit_list2;          /* the second thread's list of forms */
    int32_t *unit_bits;           /* [2][units / 32 + 1]: each part's units with an act */
    int32_t *n_visited, *n_list;  /* [2] units each part visited; [1] acts listed */
    void *memo;                   /* the plan's tables of results to reuse (fast_memo.c),
                                     shared by its scratch copies; NULL: none */
} Model;

/* The layout as this compiler lays it out: "Struct=sizeof Struct.field=offset ...",
   checked against the ctypes Structures at load time (fast_native.check_layout). */
#include <stddef.h>
#define SZ(T) #T "=%zu "
#define OF(T, f) #T "." #f "=%zu "
/* append to the caller's `buf` at `n` (also qgpu_batch_layout, fast_batch_ops.c) */
#define PUT_S(T) n += (size_t)snprintf(buf + n, sizeof buf - n, SZ(T), sizeof(T))
#define PUT(T, f) n += (size_t)snprintf(buf + n, sizeof buf - n, OF(T, f), offsetof(T, f))
const char *qgpu_layout(void) {
    static char buf[8192];
    if (buf[0]) return buf;
    size_t n = 0;
    PUT_S(Csc); PUT(Csc, n_cols); PUT(Csc, col); PUT(Csc, ptr); PUT(Csc, row); PUT(Csc, val);
    PUT_S(Layer); PUT(Layer, kind); PUT(Layer, in_norm); PUT(Layer, post_norm);
    PUT(Layer, n_heads); PUT(Layer, n_key_heads); PUT(Layer, n_slots); PUT(Layer, head_ids);
    PUT(Layer, key_slot); PUT(Layer, proj); PUT(Layer, n_active); PUT(Layer, active);
    PUT(Layer, conv_w); PUT(Layer, neg_exp_a_log); PUT(Layer, dt_bias); PUT(Layer, norm_w);
    PUT(Layer, out); PUT(Layer, n_out_rows); PUT(Layer, out_rows); PUT(Layer, n_units);
    PUT(Layer, n_forms); PUT(Layer, bias_col); PUT(Layer, gate); PUT(Layer, unit_form);
    PUT(Layer, unit_bias); PUT(Layer, up_ptr); PUT(Layer, up_col); PUT(Layer, up_val);
    PUT(Layer, down); PUT(Layer, n_down_rows); PUT(Layer, down_rows); PUT(Layer, gate_hi);
    PUT(Layer, down_hi); PUT(Layer, form_split); PUT(Layer, down_row_split);
    PUT(Layer, n_single);
    PUT(Layer, up1_col); PUT(Layer, up1_val); PUT(Layer, form_ptr); PUT(Layer, form_unit);
    PUT(Layer, form_bias); PUT(Layer, form_bias_max); PUT(Layer, form_bias_min);
    PUT_S(Head); PUT(Head, n_rows); PUT(Head, row_ids); PUT(Head, ptr); PUT(Head, col);
    PUT(Head, val); PUT(Head, first_zero_row); PUT(Head, max_row_nnz); PUT(Head, n_head_cols);
    PUT(Head, head_cols); PUT(Head, group_l1); PUT(Head, block_l1); PUT(Head, n_groups);
    PUT(Head, block_rows); PUT(Head, group_block); PUT(Head, group_ptr); PUT(Head, group_col);
    PUT(Head, group_max); PUT(Head, group_min); PUT(Head, block_ptr); PUT(Head, block_col);
    PUT(Head, block_max); PUT(Head, block_min);
    PUT_S(Model); PUT(Model, hidden); PUT(Model, n_layers); PUT(Model, conv_k); PUT(Model, dk);
    PUT(Model, dv); PUT(Model, eps); PUT(Model, sqrt_dk); PUT(Model, embed_ptr);
    PUT(Model, embed_col); PUT(Model, embed_val); PUT(Model, final_norm); PUT(Model, layers);
    PUT(Model, head); PUT(Model, h); PUT(Model, x); PUT(Model, mixed); PUT(Model, slots);
    PUT(Model, qkv); PUT(Model, qn); PUT(Model, kn); PUT(Model, o); PUT(Model, y);
    PUT(Model, units); PUT(Model, forms); PUT(Model, head_x); PUT(Model, nzq); PUT(Model, nzk);
    PUT(Model, nq); PUT(Model, nk); PUT(Model, nzch); PUT(Model, newc); PUT(Model, proc);
    PUT(Model, unit_list); PUT(Model, group_order); PUT(Model, group_ub); PUT(Model, conv_out);
    PUT(Model, acts); PUT(Model, x2); PUT(Model, unit_list2); PUT(Model, unit_bits); PUT(Model, n_visited);
    PUT(Model, n_list); PUT(Model, memo);
    return buf;
}

static void embed_row(const Model *m, int64_t token, float *h) {
    memset(h, 0, sizeof(float) * m->hidden);
    for (int32_t p = m->embed_ptr[token]; p < m->embed_ptr[token + 1]; p++)
        h[m->embed_col[p]] = m->embed_val[p];
}
