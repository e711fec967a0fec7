"""model.sparse_tensor: `SparseTensor`, a float32 matrix held by its stored entries that
code written for numpy arrays can index, assign into and compute with.

Compiled weight matrices are >99.8% zeros, so `QwenWeights` keeps its large matrices in
this form (model.weights decides which) and the circuit compiler writes into them with the
same numpy indexing it would use on a dense array.

Storage: CSR (row pointer int64, columns int32 ascending within a row, values float32),
plus a dict of pending writes {row * width + col: value} that is merged in (last write
wins) before any read of a region; scalar reads and writes never merge. Every entry that
is not +0.0 is stored (a written -0.0 stays, as it would in a numpy array).

Semantics are numpy's, for any index a 2-D array takes that has no None or Ellipsis (ints,
slices, integer or boolean arrays and lists, in any combination; other indexes fall back
to a dense copy):
- `t[index]` returns a dense float32 *copy* (a scalar for t[i, j]), never a view: write
  through the tensor (`t[index] = value`, `t[index] *= s`);
- `t[index] = value` assigns with numpy's broadcasting and float32 conversion;
- `np.asarray(t)` and `todense()` give the dense matrix; ufuncs and operators
  (t != 0, t * 2, np.abs(t)) take the dense matrix of a SparseTensor operand and return
  dense arrays; in-place operators on the whole tensor write back.
"""

from __future__ import annotations

import numbers

import numpy as np

from qgpu.model.csr import Csr, indptr_of, row_ranges

F32 = np.float32
PENDING_LIMIT = 1 << 18  # pending writes merged in beyond this many
SMALL_REGION = 4096  # assignments to at most this many positions are pending writes
_HOT_INDEX = (int, np.int64, np.int32)  # index types of the scalar fast paths
_HOT_VALUE = (float, int, np.float32, np.float64)


def _int_index(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _position(i, n: int) -> int:
    i = int(i)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for axis of size {n}")
    return i + n if i < 0 else i


def _axis(sel, n: int):
    """(positions the selector touches, in block order; the selector on that block), or
    None when it is not an int, slice, or 1-D integer / boolean array."""
    if _int_index(sel):
        return np.array([_position(sel, n)], np.int64), 0
    if isinstance(sel, slice):
        return np.arange(n, dtype=np.int64)[sel], slice(None)
    if sel is None or sel is Ellipsis or isinstance(sel, (numbers.Number, str)):
        return None
    arr = np.asarray(sel)
    if arr.dtype == np.bool_:
        if arr.ndim != 1 or arr.size != n:
            return None
        hit = np.flatnonzero(arr)
        return hit.astype(np.int64), np.arange(hit.size)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        return None
    if arr.size and (arr.min() < -n or arr.max() >= n):
        raise IndexError(f"index out of bounds for axis of size {n}")
    arr = np.where(arr < 0, arr + n, arr).astype(np.int64)
    needed, inverse = np.unique(arr, return_inverse=True)
    return needed, inverse.reshape(arr.shape)


class SparseTensor(np.lib.mixins.NDArrayOperatorsMixin):
    """A 2-D float32 matrix stored by its entries (see the module docstring)."""

    dtype = np.dtype(F32)
    ndim = 2

    def __init__(self, shape, indptr=None, cols=None, vals=None):
        if len(shape) != 2:
            raise ValueError(f"a SparseTensor is 2-D, got shape {tuple(shape)}")
        self.shape = (int(shape[0]), int(shape[1]))
        empty = indptr is None
        self._indptr = np.zeros(self.shape[0] + 1, np.int64) if empty else np.asarray(
            indptr, np.int64)
        self._cols = np.zeros(0, np.int32) if empty else np.asarray(cols, np.int32)
        self._vals = np.zeros(0, F32) if empty else np.asarray(vals, F32)
        self._pending: dict[int, float] = {}
        self.version = 0  # bumped by every write: lets readers cache a dense copy

    # -- construction --
    @classmethod
    def zeros(cls, shape) -> SparseTensor:
        return cls(shape)

    @classmethod
    def from_dense(cls, matrix, block_elements: int = 1 << 22) -> SparseTensor:
        """Every entry of `matrix` that is not +0.0, scanned in row blocks."""
        matrix = np.asarray(matrix)
        if matrix.ndim != 2:
            raise ValueError(f"a SparseTensor is 2-D, got shape {matrix.shape}")
        n, width = matrix.shape
        if n == 0:
            return cls((n, width))
        step = max(1, block_elements // max(width, 1))
        counts, cols, vals = [], [], []
        for start in range(0, n, step):
            block = np.ascontiguousarray(matrix[start:start + step], F32)
            stored = block.view(np.uint32) != 0
            counts.append(stored.sum(axis=1))
            r, c = np.nonzero(stored)
            cols.append(c.astype(np.int32))
            vals.append(block[r, c])
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.concatenate(counts), out=indptr[1:])
        return cls((n, width), indptr, np.concatenate(cols), np.concatenate(vals))

    @classmethod
    def from_flat(cls, shape, flat_index: np.ndarray, values: np.ndarray) -> SparseTensor:
        """From ascending distinct positions in the flattened matrix and their values."""
        n, width = int(shape[0]), int(shape[1])
        flat_index = np.asarray(flat_index, np.int64)
        rows = flat_index // max(width, 1)
        return cls((n, width), indptr_of(rows, n), (flat_index - rows * width),
                   np.asarray(values, F32))

    def copy(self) -> SparseTensor:
        self._flush()
        return SparseTensor(self.shape, self._indptr.copy(), self._cols.copy(),
                            self._vals.copy())

    # -- what is stored --
    @property
    def size(self) -> int:
        return self.shape[0] * self.shape[1]

    @property
    def nnz(self) -> int:
        """Stored entries (after merging pending writes)."""
        self._flush()
        return int(self._vals.size)

    @property
    def nbytes(self) -> int:
        self._flush()
        return self._indptr.nbytes + self._cols.nbytes + self._vals.nbytes

    def count_nonzero(self) -> int:
        self._flush()
        return int(np.count_nonzero(self._vals))

    def any(self) -> bool:
        self._flush()
        return bool(np.any(self._vals))

    def csr(self) -> Csr:
        """The stored entries as a `Csr` (-0.0 included; `.nonzero()` drops it)."""
        self._flush()
        return Csr(self.shape, self._indptr.copy(), self._cols.astype(np.int64),
                   self._vals.copy())

    def todense(self) -> np.ndarray:
        self._flush()
        out = np.zeros(self.shape, F32)
        out[np.repeat(np.arange(self.shape[0]), np.diff(self._indptr)), self._cols] = self._vals
        return out

    def __array__(self, dtype=None, copy=None):
        dense = self.todense()
        return dense if dtype is None else dense.astype(dtype)

    def astype(self, dtype, copy=True) -> np.ndarray:
        return self.todense().astype(dtype)

    @property
    def T(self) -> np.ndarray:  # noqa: N802 (numpy's name)
        return self.todense().T

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"SparseTensor(shape={self.shape}, stored={self.nnz})"

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, SparseTensor) else x for x in inputs)
        if out is None:
            return getattr(ufunc, method)(*inputs, **kwargs)
        dense_out = tuple(np.asarray(o) if isinstance(o, SparseTensor) else o for o in out)
        getattr(ufunc, method)(*inputs, out=dense_out, **kwargs)
        for target, dense in zip(out, dense_out, strict=True):
            if isinstance(target, SparseTensor):
                target[...] = dense
        return out[0] if len(out) == 1 else out

    # -- reading --
    def __getitem__(self, index):
        if type(index) is tuple and len(index) == 2:
            i, j = index
            if type(i) in _HOT_INDEX and type(j) in _HOT_INDEX \
                    and 0 <= i < self.shape[0] and 0 <= j < self.shape[1]:
                return self._scalar(int(i), int(j))
            if _int_index(i) and _int_index(j):
                return self._scalar(_position(i, self.shape[0]), _position(j, self.shape[1]))
        parsed = self._parse(index)
        if parsed is None:
            return self.todense()[index]
        rows, cols, local = parsed
        return self._block(rows, cols)[local]

    def _scalar(self, i: int, j: int):
        value = self._pending.get(i * self.shape[1] + j)
        if value is not None:
            return F32(value)
        a, b = int(self._indptr[i]), int(self._indptr[i + 1])
        if a == b:
            return F32(0)
        k = a + int(self._cols[a:b].searchsorted(j))
        return self._vals[k] if k < b and self._cols[k] == j else F32(0)

    def _parse(self, index):
        """(rows, cols, index on the block rows x cols) or None for a dense fallback."""
        if not isinstance(index, tuple):
            index = (index,)
        if len(index) == 1 and index[0] is Ellipsis:
            index = (slice(None),)
        if len(index) > 2 or any(i is None or i is Ellipsis for i in index):
            return None
        index = index + (slice(None),) * (2 - len(index))
        rows, cols = _axis(index[0], self.shape[0]), _axis(index[1], self.shape[1])
        if rows is None or cols is None:
            return None
        return rows[0], cols[0], (rows[1], cols[1])

    def _entries(self, rows: np.ndarray):
        """Entry positions of `rows` and, for each, its row's place in `rows`."""
        idx, counts = row_ranges(self._indptr, rows)
        return idx, np.repeat(np.arange(rows.size), counts)

    def _block(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Dense rows x cols (both lists of distinct positions)."""
        self._flush()
        out = np.zeros((rows.size, cols.size), F32)
        if not rows.size or not cols.size:
            return out
        idx, row_pos = self._entries(rows)
        where = np.full(self.shape[1], -1, np.int64)
        where[cols] = np.arange(cols.size)
        col_pos = where[self._cols[idx]]
        hit = col_pos >= 0
        out[row_pos[hit], col_pos[hit]] = self._vals[idx[hit]]
        return out

    # -- writing --
    def __setitem__(self, index, value):
        self.version += 1
        if type(index) is tuple and len(index) == 2:  # t[i, j] = number: the hot path
            i, j = index
            if type(i) in _HOT_INDEX and type(j) in _HOT_INDEX and type(value) in _HOT_VALUE \
                    and 0 <= i < self.shape[0] and 0 <= j < self.shape[1]:
                self._pending[int(i) * self.shape[1] + int(j)] = float(value)
                if len(self._pending) > PENDING_LIMIT:
                    self._flush()
                return
            if _int_index(i) and _int_index(j) and isinstance(value, (float, int, np.number)) \
                    and not isinstance(value, (bool, np.bool_, complex, np.complexfloating)):
                i, j = _position(i, self.shape[0]), _position(j, self.shape[1])
                self._pending[i * self.shape[1] + j] = float(value)
                if len(self._pending) > PENDING_LIMIT:
                    self._flush()
                return
        parsed = self._parse(index)
        if parsed is None:
            dense = self.todense()
            dense[index] = value
            self._replace(np.arange(self.shape[0]), np.arange(self.shape[1]), None, dense)
            return
        rows, cols, local = parsed
        new = np.zeros((rows.size, cols.size), F32)
        new[local] = value
        if isinstance(local[0], slice) and isinstance(local[1], slice):
            selected = None  # the whole block rows x cols
        else:
            selected = np.zeros((rows.size, cols.size), bool)
            selected[local] = True
        if new.size <= SMALL_REGION:
            r, c = np.nonzero(selected) if selected is not None else np.divmod(
                np.arange(new.size), cols.size)
            keys = rows[r] * self.shape[1] + cols[c]
            self._pending.update(zip(keys.tolist(), new[r, c].tolist(), strict=True))
            if len(self._pending) > PENDING_LIMIT:
                self._flush()
        else:
            self._flush()
            self._replace(rows, cols, selected, new)

    def _flush(self) -> None:
        """Merge the pending writes into the CSR arrays."""
        if not self._pending:
            return
        keys = np.fromiter(self._pending.keys(), np.int64, len(self._pending))
        vals = np.array(list(self._pending.values()), F32)
        self._pending = {}
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        width = self.shape[1]
        rows = np.unique(keys // width)
        idx, row_pos = self._entries(rows)
        old_keys = rows[row_pos] * width + self._cols[idx]
        kept = ~np.isin(old_keys, keys, assume_unique=True)
        merged = np.concatenate([old_keys[kept], keys])
        merged_vals = np.concatenate([self._vals[idx[kept]], vals])
        order = np.argsort(merged, kind="stable")
        self._splice(rows, merged[order], merged_vals[order])

    def _replace(self, rows, cols, selected: np.ndarray | None, new: np.ndarray) -> None:
        """Set the `selected` positions (None: all) of the block rows x cols to `new`
        (the caller has flushed the pending writes)."""
        width = self.shape[1]
        idx, row_pos = self._entries(rows)
        where = np.full(width, -1, np.int64)
        where[cols] = np.arange(cols.size)
        col_pos = where[self._cols[idx]]
        hit = col_pos >= 0
        if selected is None:
            overwritten = hit
            r, c = np.nonzero(new.view(np.uint32))
        else:
            overwritten = np.zeros(idx.size, bool)
            overwritten[hit] = selected[row_pos[hit], col_pos[hit]]
            r, c = np.nonzero(selected & (new.view(np.uint32) != 0))
        old_keys = rows[row_pos[~overwritten]] * width + self._cols[idx[~overwritten]]
        merged = np.concatenate([old_keys, rows[r] * width + cols[c]])
        merged_vals = np.concatenate([self._vals[idx[~overwritten]], new[r, c]])
        order = np.argsort(merged, kind="stable")
        self._splice(np.sort(rows), merged[order], merged_vals[order])

    def _splice(self, rows: np.ndarray, keys: np.ndarray, vals: np.ndarray) -> None:
        """Replace the content of `rows` (ascending, distinct) by the entries `keys`
        (ascending flat positions, all in those rows); +0.0 values are dropped."""
        stored = vals.view(np.uint32) != 0
        keys, vals = keys[stored], vals[stored]
        n, width = self.shape
        counts = np.diff(self._indptr)
        touched = np.zeros(n, bool)
        touched[rows] = True
        new_counts = np.where(touched, 0, counts) + np.bincount(keys // width, minlength=n)
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(new_counts, out=indptr[1:])
        cols = np.empty(indptr[-1], np.int32)
        values = np.empty(indptr[-1], F32)
        new_slot = np.repeat(touched, new_counts)
        old_slot = ~np.repeat(touched, counts)
        cols[~new_slot], values[~new_slot] = self._cols[old_slot], self._vals[old_slot]
        cols[new_slot], values[new_slot] = keys % width, vals
        self._indptr, self._cols, self._vals = indptr, cols, values

    def dense_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a dense block (what a streaming writer needs)."""
        return self[start:stop]
