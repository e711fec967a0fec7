"""model.csr: `Csr`, an immutable compressed-sparse-row float32 matrix, the form in which
the engines read weights (`QwenWeights.csr`), whether a tensor is held sparse or dense.

Rows are kept in order and, within a row, columns ascending: the order in which
`np.nonzero` lists a dense matrix's entries, so a structure built from a `Csr` (the fast
engine's plan, `SparseRows`) is the same, array for array, as one built by scanning the
dense matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = np.float32


def row_ranges(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entry positions of `rows` (in that order) and each row's entry count."""
    rows = np.asarray(rows, np.int64)
    starts = indptr[rows]
    counts = indptr[rows + 1] - starts
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    return np.repeat(starts - offsets, counts) + np.arange(total, dtype=np.int64), counts


def indptr_of(row_ids: np.ndarray, n_rows: int) -> np.ndarray:
    """The row pointer of entries listed row by row (row_ids ascending)."""
    out = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(row_ids, minlength=n_rows), out=out[1:])
    return out


@dataclass(frozen=True)
class Csr:
    shape: tuple[int, int]
    indptr: np.ndarray  # int64 [rows + 1]
    cols: np.ndarray  # int64 [nnz], ascending within a row
    vals: np.ndarray  # float32 [nnz]

    @classmethod
    def from_dense(cls, matrix: np.ndarray) -> Csr:
        """The entries of a dense matrix that are != 0 (as np.nonzero: -0.0 is zero)."""
        matrix = np.asarray(matrix, F32)
        if matrix.ndim != 2:
            raise ValueError(f"a Csr is 2-D, got shape {matrix.shape}")
        rows, cols = np.nonzero(matrix)
        return cls(matrix.shape, indptr_of(rows, matrix.shape[0]), cols.astype(np.int64),
                   matrix[rows, cols])

    @classmethod
    def empty(cls, n_cols: int) -> Csr:
        return cls((0, n_cols), np.zeros(1, np.int64), np.zeros(0, np.int64),
                   np.zeros(0, F32))

    # -- what is there --
    @property
    def nnz(self) -> int:
        return int(self.vals.size)

    @property
    def counts(self) -> np.ndarray:
        """Entries per row."""
        return np.diff(self.indptr)

    def row_ids(self) -> np.ndarray:
        """The row of every entry."""
        return np.repeat(np.arange(self.shape[0], dtype=np.int64), self.counts)

    def live_rows(self) -> np.ndarray:
        """Rows holding at least one entry, ascending."""
        return np.flatnonzero(self.counts)

    def col_counts(self) -> np.ndarray:
        """Entries per column."""
        return np.bincount(self.cols, minlength=self.shape[1])

    def nonzero(self) -> Csr:
        """Without the entries that are 0 (-0.0 included)."""
        keep = self.vals != 0
        if keep.all():
            return self
        return Csr(self.shape, indptr_of(self.row_ids()[keep], self.shape[0]),
                   self.cols[keep], self.vals[keep])

    # -- new matrices --
    def take_rows(self, rows) -> Csr:
        """The matrix of rows `rows` (in that order)."""
        rows = np.asarray(rows, np.int64).reshape(-1)
        idx, counts = row_ranges(self.indptr, rows)
        indptr = np.zeros(rows.size + 1, np.int64)
        np.cumsum(counts, out=indptr[1:])
        return Csr((rows.size, self.shape[1]), indptr, self.cols[idx], self.vals[idx])

    def take_cols(self, cols) -> Csr:
        """The matrix of columns `cols` (distinct, in that order): M[:, cols]."""
        cols = np.asarray(cols, np.int64).reshape(-1)
        where = np.full(self.shape[1], -1, np.int64)
        where[cols] = np.arange(cols.size)
        new = where[self.cols]
        keep = new >= 0
        row_ids, new, vals = self.row_ids()[keep], new[keep], self.vals[keep]
        if cols.size > 1 and np.any(np.diff(cols) < 0):
            order = np.lexsort((new, row_ids))
            row_ids, new, vals = row_ids[order], new[order], vals[order]
        return Csr((self.shape[0], cols.size), indptr_of(row_ids, self.shape[0]), new, vals)

    def without_col(self, col: int) -> Csr:
        keep = self.cols != col
        return Csr(self.shape, indptr_of(self.row_ids()[keep], self.shape[0]),
                   self.cols[keep], self.vals[keep])

    def col_values(self, col: int) -> np.ndarray:
        """Dense column `col`."""
        out = np.zeros(self.shape[0], F32)
        hit = self.cols == col
        out[self.row_ids()[hit]] = self.vals[hit]
        return out

    def transpose(self) -> Csr:
        """M^T: per column of M, its rows ascending (np.nonzero order of M^T)."""
        order = np.argsort(self.cols, kind="stable")
        return Csr((self.shape[1], self.shape[0]), indptr_of(self.cols[order], self.shape[1]),
                   self.row_ids()[order], self.vals[order])

    @staticmethod
    def vstack(parts: list[Csr]) -> Csr:
        n_cols = parts[0].shape[1]
        if any(p.shape[1] != n_cols for p in parts):
            raise ValueError("vstack needs matrices of one width")
        ends = np.cumsum([p.nnz for p in parts])
        indptr = np.concatenate([[0]] + [p.indptr[1:] + (e - p.nnz)
                                         for p, e in zip(parts, ends, strict=True)])
        return Csr((sum(p.shape[0] for p in parts), n_cols), indptr.astype(np.int64),
                   np.concatenate([p.cols for p in parts]),
                   np.concatenate([p.vals for p in parts]).astype(F32, copy=False))

    def todense(self) -> np.ndarray:
        out = np.zeros(self.shape, F32)
        out[self.row_ids(), self.cols] = self.vals
        return out
