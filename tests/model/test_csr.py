"""model.csr: Csr operations equal the same operations on the dense matrix."""

from __future__ import annotations

import numpy as np

from qgpu.model.csr import Csr


def random_matrix(rng, n=23, m=17, fill=0.2) -> np.ndarray:
    return (rng.normal(size=(n, m)) * (rng.random((n, m)) < fill)).astype(np.float32)


def same(csr: Csr, dense: np.ndarray) -> None:
    """csr holds exactly dense's nonzero entries, in np.nonzero order."""
    rows, cols = np.nonzero(dense)
    assert csr.shape == dense.shape
    assert np.array_equal(csr.row_ids(), rows) and np.array_equal(csr.cols, cols)
    assert np.array_equal(csr.vals, dense[rows, cols])
    assert np.array_equal(csr.todense(), dense)


def test_from_dense_drops_zeros_of_both_signs():
    dense = np.zeros((3, 4), np.float32)
    dense[0, 1], dense[2, 3], dense[1, 1] = 2.0, -1.0, -0.0
    csr = Csr.from_dense(dense)
    same(csr, dense)
    assert csr.nnz == 2
    assert np.array_equal(csr.live_rows(), [0, 2]) and np.array_equal(csr.counts, [1, 0, 1])
    assert np.array_equal(csr.col_counts(), [0, 1, 0, 1])


def test_row_and_column_selections():
    rng = np.random.default_rng(1)
    dense = random_matrix(rng)
    csr = Csr.from_dense(dense)
    rows = [5, 0, 22, 5, 7]
    same(csr.take_rows(rows), dense[rows])
    for cols in ([3, 4, 10, 16], [16, 2, 9], []):
        same(csr.take_cols(cols), dense[:, cols])
    same(csr.transpose(), dense.T)
    same(csr.without_col(4), np.where(np.arange(17) == 4, 0, dense).astype(np.float32))
    assert np.array_equal(csr.col_values(4), dense[:, 4])
    other = random_matrix(rng, n=5)
    same(Csr.vstack([csr, Csr.from_dense(other), Csr.empty(17)]), np.vstack([dense, other]))


def test_nonzero_prunes_stored_zeros():
    csr = Csr((2, 3), np.array([0, 2, 3]), np.array([0, 2, 1]),
              np.array([0.0, 5.0, -0.0], np.float32))
    pruned = csr.nonzero()
    assert pruned.nnz == 1 and np.array_equal(pruned.todense(), csr.todense())
    assert pruned.nonzero() is pruned
