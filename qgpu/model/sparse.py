"""model.sparse: `SparseRows`, a row-sparse float32 matrix for the fast engine.

Compiled weight matrices are nearly all zeros. A matrix is stored by its nonzero rows
and, among their columns, only those that hold a nonzero. Small or dense-enough blocks
are kept as a compact dense block (one BLAS call on the gathered inputs); large sparse
ones as scipy.sparse CSR products: each output the sequential sum of its row's terms in
column order, the native kernel's (fast_kernel.c) order, bit for bit (tested), and fast
over many positions (the margin report's batched products). Rows that are all zero are
never computed: the caller gets the list of live rows and scatters results where it
needs them.
It is built from the matrix's nonzero entries (a `Csr`; a dense matrix is scanned once
into one): the same arrays either way.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse

from qgpu.model.csr import Csr

F32 = np.float32
DENSE_FILL = 0.25  # above this fill of the compact block, dense BLAS beats gathering
DENSE_SMALL = 4096  # compact blocks this small are dense regardless of fill


class SparseRows:
    """W restricted to its nonzero rows: `matvec(x)` returns W[rows] @ x."""

    def __init__(self, matrix: np.ndarray | Csr):
        csr = matrix.nonzero() if isinstance(matrix, Csr) else Csr.from_dense(matrix)
        self.shape = csr.shape
        self.rows = csr.live_rows()
        self.cols = np.unique(csr.cols)
        live = csr.take_rows(self.rows)
        self.nnz = live.nnz
        size = self.rows.size * self.cols.size
        self.dense = size <= DENSE_SMALL or self.nnz >= DENSE_FILL * size
        if self.dense:
            block_t = np.zeros((self.cols.size, self.rows.size), F32)  # x[cols] @ block_t
            block_t[np.searchsorted(self.cols, live.cols), live.row_ids()] = live.vals
            self.block_t = block_t
        else:
            self.csr = scipy.sparse.csr_matrix((live.vals, live.cols, live.indptr),
                                               shape=(self.rows.size, self.shape[1]))

    @property
    def empty(self) -> bool:
        return self.rows.size == 0

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """x: [in] -> [len(rows)]."""
        if self.dense:
            return x[self.cols] @ self.block_t
        return self.csr @ np.asarray(x, F32)

    def matmat(self, x: np.ndarray) -> np.ndarray:
        """x: [T, in] -> [T, len(rows)]."""
        if self.dense:
            return x[:, self.cols] @ self.block_t
        return np.ascontiguousarray((self.csr @ np.ascontiguousarray(x.T, F32)).T)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """matvec for 1-D x, matmat for 2-D x."""
        return self.matvec(x) if x.ndim == 1 else self.matmat(x)
