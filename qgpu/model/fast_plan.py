"""model.fast_plan: `NativePlan`, a compiled model laid out for the native kernel.

It turns `QwenWeights` into the sparse arrays `fast_kernel.c` reads (see its `Layer`,
`Head` and `Model` structs) and runs tokens through it. The arrays are built from each
matrix's nonzero entries (`QwenWeights.csr`: a sparse tensor is never densified; only the
embedding, which the kernel reads by row, is):
- per GDN layer: the projections of the live heads (q, k of live key heads, v, z, b, a of
  live value heads: `live_gdn_heads`) as one column-sparse matrix over the hidden input;
  the conv channels whose projection row is nonzero; out_proj by head column;
- per MLP: the live units (those whose up row has one entry first, in order, then the
  others) with their gate as a column-sparse matrix of distinct forms, each form's
  units listed by ascending bias (the kernel scans a form from its on end and stops at
  the first unit that is off), up as sparse rows (computed only for units whose
  silu(gate) is not 0), down by unit;
- the output head as sparse rows, plus max/min bounds over blocks of 32 rows and groups
  of 1,024 rows, which let the greedy argmax skip every block that provably cannot hold
  the maximum (exact: a skipped block's bound, widened by the worst float32 rounding of a
  row sum, is below a value actually computed).
The plan keeps references to every array it hands to C. Threads may run one plan at
once, each on its own state: the weights' arrays are only read, and every call takes a
`Model` struct with scratch buffers of its own from a pool (one per concurrent call).
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from contextlib import contextmanager
from functools import partial

import numpy as np

from qgpu.model.config import LINEAR
from qgpu.model.csr import Csr, indptr_of
from qgpu.model.fast_batch_plan import BatchTables, batch_tables
from qgpu.model.fast_binding import Binding
from qgpu.model.fast_native import POINTER_DTYPES, Layer, Model, field_owner, field_type
from qgpu.model.fast_numpy import LiveHeads, live_gdn_heads, live_mlp_units
from qgpu.model.state import ModelState
from qgpu.model.weights import EMBED, FINAL_NORM, QwenWeights

F32 = np.float32
BLOCK_ROWS = 32
GROUP_BLOCKS = 32


def _columns(matrix: Csr, all_columns: bool = False):
    """Column-sparse form of M: (col, ptr, row, val), rows ascending within a column; only
    nonzero columns unless all_columns."""
    t = matrix.transpose()
    if all_columns:
        return np.arange(t.shape[0]), t.indptr, t.cols, t.vals
    live = t.live_rows()
    return live, np.append(t.indptr[live], t.nnz), t.cols, t.vals


def _bounds(pos: np.ndarray, cols: np.ndarray, vals: np.ndarray, n_rows: int, rows_per: int,
            hidden: int):
    """Per block of `rows_per` consecutive rows: the columns any row uses and, per column,
    the max and min weight (0 included when some row of the block lacks the column)."""
    block = pos // rows_per
    keys = block.astype(np.int64) * hidden + cols
    order = np.argsort(keys, kind="stable")
    keys, vals = keys[order], vals[order]
    uniq, start, count = np.unique(keys, return_index=True, return_counts=True)
    vmax = np.maximum.reduceat(vals, start)
    vmin = np.minimum.reduceat(vals, start)
    ublock = uniq // hidden
    rows_in = np.minimum(rows_per, n_rows - ublock * rows_per)
    partial = count < rows_in
    vmax = np.where(partial, np.maximum(vmax, 0), vmax).astype(F32)
    vmin = np.where(partial, np.minimum(vmin, 0), vmin).astype(F32)
    n_blocks = -(-n_rows // rows_per)
    ptr = np.searchsorted(ublock, np.arange(n_blocks + 1))
    return ptr, (uniq % hidden), vmax, vmin


def l1_empty() -> np.ndarray:
    return np.zeros(0, np.float64)


def _block_max(values: np.ndarray, rows_per: int) -> np.ndarray:
    """Per block of `rows_per` consecutive rows, the max of `values`, rounded up to float32
    (a bound must not shrink)."""
    if not values.size:
        return np.zeros(0, F32)
    top = np.maximum.reduceat(values, np.arange(0, values.size, rows_per))
    out = top.astype(F32)
    return np.where(out.astype(np.float64) < top, np.nextafter(out, F32(np.inf)), out)


def _half(counts: np.ndarray) -> int:
    """The index that splits `counts` (work per item) into two parts of equal sums."""
    total = np.cumsum(counts)
    return int(np.searchsorted(total, total[-1] / 2)) if total.size else 0


def _rows_in(matrix: Csr, r0: int, r1: int) -> Csr:
    """The matrix with only the entries of rows [r0, r1) (same shape, rows kept in place)."""
    rows = matrix.row_ids()
    keep = (rows >= r0) & (rows < r1)
    return Csr(matrix.shape, indptr_of(rows[keep], matrix.shape[0]), matrix.cols[keep],
               matrix.vals[keep])


def _gate_forms(gate: Csr):
    """Rows of `gate` grouped by their coefficients outside the column used by the most
    rows (the constant dimension, in compiled circuits): steps come in pairs and adders
    in sixes that differ only there. Returns (forms, unit_form, unit_bias, bias_col)."""
    n = gate.shape[0]
    counts = gate.col_counts()
    bias_col = int(np.argmax(counts)) if counts.size and counts.max() > 1 else -1
    if bias_col < 0:
        return gate, np.arange(n), np.zeros(n, F32), -1
    rest = gate.without_col(bias_col)
    cols, vals, ptr = rest.cols, rest.vals, rest.indptr
    index: dict[bytes, int] = {}
    unit_form = np.array([index.setdefault(cols[a:b].tobytes() + vals[a:b].tobytes(),
                                           len(index))
                          for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist(), strict=True)])
    first = np.zeros(len(index), np.int64)
    first[unit_form[::-1]] = np.arange(n)[::-1]  # the first unit of each form
    return rest.take_rows(first), unit_form, gate.col_values(bias_col), bias_col


class PlanBuilder:
    """Lays `QwenWeights` out as the kernel's fields: `fields[path]` is an array (for a
    pointer field) or a number, path naming the field in the `Model` struct
    ("layers.3.proj.col", "head.n_rows", "embed_val"); "live.{i}.*" are the GDN layers'
    `LiveHeads` and "sizes.*" the scratch sizes (not struct fields)."""

    def __init__(self, weights: QwenWeights):
        self.weights = weights
        c = self.config = weights.config
        self.fields: dict[str, np.ndarray | int | float] = {}
        self.sizes = dict(slots=1, channels=1, units=1, key=1, heads=1)
        f = self.fields
        h, dk = c.hidden_size, c.linear_key_head_dim
        f.update(hidden=h, n_layers=c.num_hidden_layers, conv_k=c.linear_conv_kernel_dim,
                 dk=dk, dv=c.linear_value_head_dim, eps=float(F32(c.rms_norm_eps)),
                 sqrt_dk=float(F32(dk ** 0.5)))
        self._embedding()
        f["final_norm"] = F32(1) + weights.dense(FINAL_NORM)
        for i in range(c.num_hidden_layers):
            self._layer(i, f"layers.{i}.")
        self._head(weights.csr(weights.head_name))
        f.update({f"sizes.{k}": v for k, v in self.sizes.items()})
        for path, value in f.items():  # each array in its field's type: stored as used
            if isinstance(value, np.ndarray):
                dtype = np.int64 if path.startswith("live.") else \
                    POINTER_DTYPES[field_type(path)]
                f[path] = np.ascontiguousarray(value, dtype)

    def _arrays(self, prefix: str, **arrays) -> None:
        for name, a in arrays.items():
            self.fields[prefix + name] = a

    def _csc(self, prefix: str, matrix: Csr, all_columns: bool = False) -> None:
        col, ptr, row, val = _columns(matrix, all_columns)
        self.fields[prefix + "n_cols"] = len(col)
        self._arrays(prefix, col=col, ptr=ptr, row=row, val=val)

    def _embedding(self) -> None:
        """Rows by token: every entry whose bits are not 0 (-0.0 kept), so that writing a
        row's entries over zeros gives the dense row bit for bit."""
        table = self.weights[EMBED]
        ptr, cols, vals = [np.zeros(1, np.int64)], [], []
        for a in range(0, table.shape[0], 4096):
            block = np.ascontiguousarray(table[a:a + 4096], F32)
            r, c = np.nonzero(block.view(np.int32))
            ptr.append(ptr[-1][-1] + np.cumsum(np.bincount(r, minlength=block.shape[0])))
            cols.append(c)
            vals.append(block[r, c])
        self._arrays("embed_", ptr=np.concatenate(ptr), col=np.concatenate(cols),
                     val=np.concatenate(vals))

    # -- layers --
    def _layer(self, i: int, p: str) -> None:
        c, w = self.config, self.weights
        self.fields[p + "in_norm"] = F32(1) + w.layer_dense(i, "input_layernorm.weight")
        self.fields[p + "post_norm"] = F32(1) + w.layer_dense(
            i, "post_attention_layernorm.weight")
        if c.layer_types[i] == LINEAR:
            self._gdn(i, p)
        elif not w.layer_is_zero_attention(i):
            raise ValueError(f"layer {i} is a live full-attention layer: the native kernel "
                             "does not run attention")
        self._mlp(i, p)

    def _gdn(self, i: int, p: str) -> None:
        w, f, sizes = self.weights, self.fields, self.sizes
        live = live_gdn_heads(w, i)
        self._arrays(f"live.{i}.", heads=live.heads, key_slot=live.key_slot,
                     key_heads=live.key_heads, channels=live.channels, z_rows=live.z_rows)
        f.update({p + "kind": 1, p + "n_heads": len(live.heads),
                  p + "n_key_heads": len(live.key_heads)})
        if not live.heads.size:
            return
        a = "linear_attn."
        stacked = Csr.vstack([
            w.layer_csr(i, a + "in_proj_qkv.weight").take_rows(live.channels),
            w.layer_csr(i, a + "in_proj_z.weight").take_rows(live.z_rows),
            w.layer_csr(i, a + "in_proj_b.weight").take_rows(live.heads),
            w.layer_csr(i, a + "in_proj_a.weight").take_rows(live.heads)])
        n_ch = len(live.channels)
        f[p + "n_slots"] = stacked.shape[0]
        self._csc(p + "proj.", stacked)
        active = np.flatnonzero(stacked.counts[:n_ch])
        f[p + "n_active"] = len(active)
        out_w = w.layer_csr(i, a + "out_proj.weight").take_cols(live.z_rows)
        self._csc(p + "out.", out_w, all_columns=True)
        out_rows = out_w.live_rows()
        f[p + "n_out_rows"] = len(out_rows)
        self._arrays(p, active=active, head_ids=live.heads, key_slot=live.key_slot,
                     conv_w=w.layer_dense(i, a + "conv1d.weight")[live.channels, 0, :],
                     neg_exp_a_log=-np.exp(w.layer_dense(i, a + "A_log"))[live.heads],
                     dt_bias=w.layer_dense(i, a + "dt_bias")[live.heads],
                     norm_w=w.layer_dense(i, a + "norm.weight"), out_rows=out_rows)
        sizes["slots"] = max(sizes["slots"], int(stacked.shape[0]))
        sizes["channels"] = max(sizes["channels"], n_ch)
        sizes["key"] = max(sizes["key"], len(live.key_heads))
        sizes["heads"] = max(sizes["heads"], len(live.heads))

    def _mlp(self, i: int, p: str) -> None:
        f = self.fields
        live, gate, up, down = live_mlp_units(self.weights, i)
        f[p + "n_units"] = len(live)
        if not live.size:
            return
        single = up.counts[live] == 1  # these units first (each class in order)
        live = np.concatenate([live[single], live[~single]])
        n_single = f[p + "n_single"] = int(single.sum())
        forms, unit_form, unit_bias, f[p + "bias_col"] = _gate_forms(gate.take_rows(live))
        f[p + "n_forms"] = forms.shape[0]
        # two parts of equal work for the kernel's two threads (one thread runs both)
        f[p + "form_split"] = split = _half(forms.counts)
        self._csc(p + "gate.", _rows_in(forms, 0, split))
        self._csc(p + "gate_hi.", _rows_in(forms, split, forms.shape[0]))
        up_live = up.take_rows(live)
        first = up_live.indptr[:n_single]
        down_live = down.take_cols(live)
        rows = down_live.live_rows()
        f[p + "n_down_rows"] = len(rows)
        f[p + "down_row_split"] = cut = _half(down_live.counts[rows])
        row_cut = rows[cut] if cut < len(rows) else down_live.shape[0]
        self._csc(p + "down.", _rows_in(down_live, 0, row_cut), all_columns=True)
        self._csc(p + "down_hi.", _rows_in(down_live, row_cut, down_live.shape[0]),
                  all_columns=True)
        by_bias = np.lexsort((np.arange(len(live)), unit_bias, unit_form))
        # each form's units by ascending bias: the kernel scans only those that are on
        form_ptr = np.searchsorted(unit_form[by_bias], np.arange(forms.shape[0] + 1))
        form_bias = unit_bias[by_bias]
        self._arrays(p, form_ptr=form_ptr, form_unit=by_bias, form_bias=form_bias,
                     form_bias_max=form_bias[form_ptr[1:] - 1],
                     form_bias_min=form_bias[form_ptr[:-1]])
        self._arrays(p, unit_form=unit_form, unit_bias=unit_bias, up_ptr=up_live.indptr,
                     up_col=up_live.cols, up_val=up_live.vals, up1_col=up_live.cols[first],
                     up1_val=up_live.vals[first], down_rows=rows)
        self.sizes["units"] = max(self.sizes["units"], len(live))

    def _head(self, head: Csr) -> None:
        f, p = self.fields, "head."
        rows = head.live_rows()
        zero = np.flatnonzero(head.counts == 0)
        block = head.take_rows(rows)
        pos, cols, vals, ptr = block.row_ids(), block.cols, block.vals, block.indptr
        head_cols = np.unique(cols)
        l1 = np.add.reduceat(np.abs(vals.astype(np.float64)), ptr[:-1]) if len(rows) \
            else l1_empty()
        l1 = np.where(np.diff(ptr) > 0, l1, 0.0)
        hidden = head.shape[1]
        b_ptr, b_col, b_max, b_min = _bounds(pos, cols, vals, len(rows), BLOCK_ROWS, hidden)
        group_rows = BLOCK_ROWS * GROUP_BLOCKS
        g_ptr, g_col, g_max, g_min = _bounds(pos, cols, vals, len(rows), group_rows, hidden)
        n_blocks, n_groups = len(b_ptr) - 1, len(g_ptr) - 1
        f.update({p + "first_zero_row": int(zero[0]) if zero.size else -1,
                  p + "n_rows": len(rows), p + "max_row_nnz": int(np.diff(ptr).max(initial=0)),
                  p + "n_head_cols": len(head_cols), p + "block_rows": BLOCK_ROWS,
                  p + "n_groups": n_groups})
        self._arrays(p, row_ids=rows, ptr=ptr, col=cols, val=vals, head_cols=head_cols,
                     group_block=np.minimum(np.arange(n_groups + 1) * GROUP_BLOCKS, n_blocks),
                     group_ptr=g_ptr, group_col=g_col, group_max=g_max, group_min=g_min,
                     block_ptr=b_ptr, block_col=b_col, block_max=b_max, block_min=b_min,
                     block_l1=_block_max(l1, BLOCK_ROWS), group_l1=_block_max(l1, group_rows))


def _forget(bindings: dict, key: int, ref: weakref.ref) -> None:
    """A state is gone: drop its binding (unless the key is a newer state's already)."""
    entry = bindings.get(key)
    if entry is not None and entry.ref is ref:
        bindings.pop(key, None)


class NativePlan:
    """The kernel's `Model` struct over a plan's fields (`PlanBuilder(weights).fields`,
    or the same read back from a plan file: model.plan_file), with its scratch."""

    def __init__(self, lib: ctypes.CDLL, fields: dict, config):
        self.lib, self.config, self.fields = lib, config, fields
        self._keep: list[np.ndarray] = []
        self._bindings: dict[int, Binding] = {}
        # per thread, the conv states stepped side by side (model.fast_multi.LaneStore)
        self.lanes = threading.local()
        # run: the steady conv path and reused layer results (fast_gdn.c, fast_memo.c);
        # False: the plain path, every visited channel and layer part computed (the
        # benchmark's before; both give the same bits)
        self.reuse = True
        self._scratch_sizes: dict[str, int] = {}
        self._free: list[tuple] = []  # (Model, its byref, its scratch arrays), not in use
        self._pool_lock = threading.Lock()
        self._batch = None
        self._batch_lock = threading.Lock()
        self.live: dict[int, LiveHeads] = {}
        dk = config.linear_key_head_dim
        for i in range(config.num_hidden_layers):
            if f"live.{i}.heads" in fields:
                a = {k: np.asarray(fields[f"live.{i}.{k}"], np.int64)
                     for k in ("heads", "key_slot", "key_heads", "channels", "z_rows")}
                self.live[i] = LiveHeads(a["heads"], a["key_slot"], a["key_heads"],
                                         a["channels"], len(a["key_heads"]) * dk, a["z_rows"])
        self._layers = (Layer * config.num_hidden_layers)()
        m = self.model = Model()
        m.layers = self._layers
        # the tables of results reused when a layer part's input repeats (fast_memo.c):
        # one per scratch (a thread stepping beside another reuses its own results; a
        # hit gives the same bits whoever stored it), freed with the plan
        m.memo = lib.qgpu_memo_new(config.num_hidden_layers)
        if m.memo:
            weakref.finalize(self, lib.qgpu_memo_free, m.memo)
        for path, value in fields.items():
            if not path.startswith(("live.", "sizes.")):
                self._set(path, value)
        self._scratch_sizes = {k[6:]: int(v) for k, v in fields.items()
                               if k.startswith("sizes.")}
        self._free.append(self._with_scratch(m))

    @classmethod
    def from_weights(cls, lib: ctypes.CDLL, weights: QwenWeights) -> NativePlan:
        return cls(lib, PlanBuilder(weights).fields, weights.config)

    def _set(self, path: str, value, model: Model | None = None,
             keep: list | None = None) -> None:
        obj, name = field_owner(self.model if model is None else model, self._layers, path)
        kind = dict(type(obj)._fields_)[name]
        dtype = POINTER_DTYPES.get(kind)
        if dtype is None:
            setattr(obj, name, value)
            return
        a = np.ascontiguousarray(value, dtype)
        (self._keep if keep is None else keep).append(a)
        setattr(obj, name, a.ctypes.data_as(kind))

    def _with_scratch(self, m: Model) -> tuple:
        """(m, a reference to it for C, its scratch arrays) with m's scratch fields set to
        arrays of its own: the kernel writes a token's intermediates there."""
        keep: list[np.ndarray] = []
        sizes = self._scratch_sizes
        h, dk = self.config.hidden_size, self.config.linear_key_head_dim
        dv = self.config.linear_value_head_dim
        for name, n in (("h", h), ("x", h), ("mixed", h), ("head_x", h),
                        ("slots", sizes["slots"]), ("qkv", sizes["channels"]),
                        ("qn", sizes["key"] * dk), ("kn", sizes["key"] * dk), ("o", dv),
                        ("y", sizes["heads"] * dv), ("units", sizes["units"]),
                        ("forms", sizes["units"]), ("conv_out", sizes["channels"]),
                        ("acts", sizes["units"] + 8), ("x2", h)):
            self._set(name, np.zeros(n, F32), m, keep)
        for name, n in (("nzq", sizes["key"] * dk), ("nzk", sizes["key"] * dk),
                        ("nq", sizes["key"]), ("nk", sizes["key"]),
                        ("nzch", sizes["channels"]), ("newc", sizes["channels"]),
                        ("proc", sizes["channels"]), ("unit_list", sizes["units"] + 8),
                        ("unit_list2", sizes["units"] + 8),
                        ("unit_bits", 2 * (sizes["units"] // 32 + 1)), ("n_visited", 2),
                        ("n_list", 1),
                        ("group_order", max(m.head.n_groups, 1))):
            self._set(name, np.zeros(n, np.int32), m, keep)
        self._set("group_ub", np.zeros(max(m.head.n_groups, 1), np.float64), m, keep)
        return m, ctypes.byref(m), keep

    @contextmanager
    def _scratch(self):
        """A reference to a `Model` whose scratch no other call is using: the weights'
        pointers are the plan's (read only by the kernel), the scratch and reuse tables
        this call's. A new one is made when all are taken (threads); it is kept for later
        calls."""
        with self._pool_lock:
            item = self._free.pop() if self._free else None
        if item is None:  # another thread holds the others: tables of its own too
            m = Model.from_buffer_copy(self.model)
            m.memo = self.lib.qgpu_memo_new(self.config.num_hidden_layers)
            if m.memo:
                weakref.finalize(self, self.lib.qgpu_memo_free, m.memo)
            item = self._with_scratch(m)
        try:
            yield item[1]
        finally:
            with self._pool_lock:
                self._free.append(item)

    # -- running --
    def _binding(self, state: ModelState, in_lanes: bool = False) -> Binding:
        """The state's tables (model.fast_binding), cached per state and made anew when an
        array was replaced or the state's position is not the one this plan left it at
        (another engine or plan stepped it). Unless in_lanes (the many-sequence step), a
        state in this thread's lane store (model.fast_multi) is taken out of it first:
        its conv arrays are then current."""
        store = None if in_lanes else getattr(self.lanes, "store", None)
        if store is not None and store.holds(state):
            store.leave(state)
        n = self.config.num_hidden_layers
        cached = self._bindings.get(id(state))
        if cached is not None and cached.matches(state, n):
            return cached
        binding = Binding(state, n, set(self.live),
                          partial(_forget, self._bindings, id(state)))
        self._bindings[id(state)] = binding
        return binding

    def run(self, state: ModelState, token: int, logits: np.ndarray | None,
            want_argmax: bool) -> int:
        """One token; writes the logits row when given (zero-filled by the caller).
        Returns the greedy token when want_argmax, else 0."""
        binding = self._binding(state)
        row = None if logits is None else logits.ctypes.data
        with self._scratch() as model:
            if self.reuse:
                out = self.lib.qgpu_forward_steady(model, *binding.steady_tables(), token, row,
                                                   int(want_argmax))
            else:
                out = self.lib.qgpu_forward(model, *binding.window_tables(), token, row,
                                            int(want_argmax))
            binding.position = state.position + 1  # the engine counts the token
            if logits is not None and want_argmax:
                return int(np.argmax(logits))
            if out < 0:  # the head's input is not finite: numpy's argmax rules
                full = np.zeros(self.config.vocab_size, F32)
                self.lib.qgpu_head_logits(model, full.ctypes.data)
                return int(np.argmax(full))
        return int(out)

    def run_greedy(self, state: ModelState, token: int, stop: np.ndarray, limit: int
                   ) -> list[int]:
        """`token`, then each greedy token in turn, in one call of the steady path
        (qgpu_generate_steady): the greedy tokens, up to the first whose stop[t] is set
        (a uint8 array over the vocabulary) or `limit` of them; the same tokens and
        state as `run` token by token. Advances the binding, not state.position."""
        binding = self._binding(state)
        out = np.zeros(limit, np.int32)
        tokens: list[int] = []
        with self._scratch() as model:
            while len(tokens) < limit:
                n = self.lib.qgpu_generate_steady(
                    model, *binding.steady_tables(), token, stop.ctypes.data,
                    limit - len(tokens), out.ctypes.data)
                tokens += out[:n].tolist()
                binding.position = state.position + len(tokens)
                if tokens[-1] >= 0:
                    break
                full = np.zeros(self.config.vocab_size, F32)  # numpy's argmax rules
                self.lib.qgpu_head_logits(model, full.ctypes.data)
                token = tokens[-1] = int(np.argmax(full))
                if stop[token]:
                    break
        return tokens

    def _batch_layers(self) -> BatchTables:
        """The batched kernel's per-layer tables (model.fast_batch_plan), built on first
        use."""
        with self._batch_lock:  # threads may run forced passes of different states
            if self._batch is None:
                self._batch = batch_tables(self.fields, self.config.num_hidden_layers)
        return self._batch

    def run_forced(self, state: ModelState, tokens: np.ndarray, batched: bool = True,
                   hidden: np.ndarray | None = None) -> np.ndarray:
        """Teacher forcing: the given tokens in one call, layer by layer; returns the
        greedy token after each (int32 array). batched: every layer's products over all
        the tokens at once (qgpu_forward_batch, fast_batch.c; used when every layer
        weight is finite), else each token exactly as `run` computes it
        (qgpu_forward_forced); both give the same bits. hidden: an
        [n, hidden_size] float32 array that receives each token's residual stream after
        the last layer (tests compare them)."""
        tokens = np.ascontiguousarray(tokens, np.int64)
        n = len(tokens)
        greedy = np.zeros(n, np.int32)
        if not n:
            return greedy
        binding = self._binding(state)
        states, convs, windows, counts = binding.window_tables()
        hs = np.zeros((n, self.config.hidden_size), F32) if hidden is None else hidden
        if hs.shape != (n, self.config.hidden_size) or hs.dtype != F32 \
                or not hs.flags.c_contiguous:
            raise ValueError("hidden must be a C-contiguous float32 [n, hidden_size] array")
        done = False
        tables = self._batch_layers() if batched else None
        with self._scratch() as model:
            if tables is not None and tables.finite:
                done = self.lib.qgpu_forward_batch(
                    model, states, convs, windows, counts, tokens.ctypes.data, n,
                    hs.ctypes.data, int(hidden is not None), greedy.ctypes.data,
                    tables.table) == 0
            if not done:  # not batched, or its scratch could not be allocated
                self.lib.qgpu_forward_forced(model, states, convs, windows, counts,
                                             tokens.ctypes.data, n, hs.ctypes.data,
                                             greedy.ctypes.data)
            binding.position = state.position + n  # the engine counts the tokens
            for t in np.flatnonzero(greedy < 0).tolist():  # not finite: numpy's argmax
                full = np.zeros(self.config.vocab_size, F32)
                self.lib.qgpu_head_logits_of(model, hs[t].ctypes.data, full.ctypes.data)
                greedy[t] = int(np.argmax(full))
        return greedy
