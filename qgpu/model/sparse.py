"""model.sparse: `SparseRows`, a row-sparse float32 matrix for the fast engine.

Compiled weight matrices are nearly all zeros. A matrix is stored by its nonzero rows
and, among their columns, only those that hold a nonzero. Small or dense-enough blocks
are kept as a compact dense block (one BLAS call on the gathered inputs); large sparse
ones as CSR products (gather, multiply, segment sum). Rows that are all zero are never
computed: the caller gets the list of live rows and scatters results where it needs them.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
DENSE_FILL = 0.25  # above this fill of the compact block, dense BLAS beats gathering
DENSE_SMALL = 4096  # compact blocks this small are dense regardless of fill


class SparseRows:
    """W restricted to its nonzero rows: `matvec(x)` returns W[rows] @ x."""

    def __init__(self, matrix: np.ndarray):
        matrix = np.asarray(matrix, dtype=F32)
        self.shape = matrix.shape
        self.rows = np.flatnonzero(np.any(matrix != 0, axis=1))
        self.cols = np.flatnonzero(np.any(matrix != 0, axis=0))
        block = matrix[np.ix_(self.rows, self.cols)]
        self.nnz = int(np.count_nonzero(block))
        self.dense = block.size <= DENSE_SMALL or self.nnz >= DENSE_FILL * block.size
        if self.dense:
            self.block_t = np.ascontiguousarray(block.T)  # x[cols] @ block_t
        else:
            r, c = np.nonzero(block)  # row-major, so rows come sorted
            self.data = block[r, c]
            self.gather = self.cols[c]  # columns in the full input vector
            counts = np.bincount(r, minlength=len(self.rows))
            self.starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)

    @property
    def empty(self) -> bool:
        return self.rows.size == 0

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """x: [in] -> [len(rows)]."""
        if self.dense:
            return x[self.cols] @ self.block_t
        return np.add.reduceat(self.data * x[self.gather], self.starts)

    def matmat(self, x: np.ndarray) -> np.ndarray:
        """x: [T, in] -> [T, len(rows)]."""
        if self.dense:
            return x[:, self.cols] @ self.block_t
        return np.add.reduceat(self.data * x[:, self.gather], self.starts, axis=1)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """matvec for 1-D x, matmat for 2-D x."""
        return self.matvec(x) if x.ndim == 1 else self.matmat(x)
