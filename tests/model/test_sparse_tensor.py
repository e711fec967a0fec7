"""model.sparse_tensor: SparseTensor behaves as the dense float32 array it stands for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as hs
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from qgpu.model import sparse_tensor as st
from qgpu.model.sparse_tensor import SparseTensor


def bits(a) -> np.ndarray:
    return np.asarray(a, np.float32).view(np.uint32)


SCALARS = [0.0, -0.0, 1.5, -2.0, 1 / 3, 7.0]


@hs.composite
def indexes(draw, n: int, m: int):
    """Every kind of numpy index of an n x m matrix: integers (negative too), slices with
    steps, integer lists and arrays (paired, with duplicates), boolean masks, Ellipsis."""
    def ints(lo, hi, size):
        return np.array(draw(hs.lists(hs.integers(lo, hi - 1), min_size=size, max_size=size)))

    def mask(size):
        return np.array(draw(hs.lists(hs.booleans(), min_size=size, max_size=size)))

    kind = draw(hs.integers(0, 9))
    i, j = draw(hs.integers(-n, n - 1)), draw(hs.integers(-m, m - 1))
    start, stop = draw(hs.integers(0, n - 1)), draw(hs.integers(0, n))
    return [
        (i, j),
        (slice(start, stop), j % m),
        (i % n, [int(x) for x in ints(0, m, 3)]),
        (slice(None), slice(j % m, None, 2)),
        (ints(0, n, 4), ints(0, m, 4)),  # paired, duplicates
        (slice(None, None, -1), mask(m)),
        i,
        (slice(None), ints(-m, m, 5)),
        (mask(n),),
        Ellipsis,
    ][kind]


class SparseTensorAsNumpy(RuleBasedStateMachine):
    """Interleaved scalar, region and in-place writes (values incl. -0.0 and non-float32
    numbers) leave the same bits as in a numpy array, and every read returns them."""

    @initialize(n=hs.integers(1, 29), m=hs.integers(1, 29))
    def matrices(self, n, m):
        self.dense, self.sparse = np.zeros((n, m), np.float32), SparseTensor.zeros((n, m))

    def index(self, data):
        return data.draw(indexes(*self.dense.shape))

    def reads_agree(self, index):
        got = self.sparse[index]
        assert np.shape(got) == np.shape(self.dense[index])
        assert np.array_equal(bits(got), bits(self.dense[index]))

    @rule(data=hs.data(), scalar=hs.sampled_from(SCALARS))
    def write_a_scalar(self, data, scalar):
        index = self.index(data)
        self.dense[index] = scalar
        self.sparse[index] = scalar
        self.reads_agree(index)

    @rule(data=hs.data(), seed=hs.integers(0, 2**32 - 1))
    def write_values(self, data, seed):
        index = self.index(data)
        value = np.random.default_rng(seed).normal(size=np.shape(self.dense[index]))
        self.dense[index] = value
        self.sparse[index] = value
        self.reads_agree(index)

    @rule(data=hs.data())
    def scale_in_place(self, data):
        index = self.index(data)
        self.dense[index] *= np.float32(3.0)
        self.sparse[index] *= np.float32(3.0)
        self.reads_agree(index)

    @invariant()
    def the_same_matrix(self):
        assert np.array_equal(bits(np.asarray(self.sparse)), bits(self.dense))
        assert np.array_equal(self.sparse.csr().todense(), self.dense)


TestSparseTensorAsNumpy = SparseTensorAsNumpy.TestCase
TestSparseTensorAsNumpy.settings = settings(max_examples=240, stateful_step_count=25,
                                            deadline=None, database=None)


def test_scalar_reads_see_pending_writes_and_read_modify_write():
    t = SparseTensor.zeros((4, 5))
    t[1, 2] = 1 / 3
    assert t[1, 2] == np.float32(1 / 3) and isinstance(t[1, 2], np.float32)
    t[1, 2] += 1.0  # numpy: float32 arithmetic on the float32 entry
    assert t[1, 2] == np.float32(1 / 3) + np.float32(1.0)
    t[3, -1] = 2
    assert t[3, 4] == 2.0 and t[0, 0] == 0.0
    assert t.nnz == 2 and t.count_nonzero() == 2 and t.any()


def test_pending_writes_merge_beyond_the_limit(monkeypatch):
    monkeypatch.setattr(st, "PENDING_LIMIT", 8)
    t = SparseTensor.zeros((10, 10))
    for k in range(30):
        t[k % 10, (3 * k) % 10] = float(k + 1)
    assert len(t._pending) <= 8
    want = np.zeros((10, 10), np.float32)
    for k in range(30):
        want[k % 10, (3 * k) % 10] = k + 1
    assert np.array_equal(np.asarray(t), want)


def test_negative_zero_is_stored_and_positive_zero_deletes():
    t = SparseTensor.zeros((3, 3))
    t[0, 0] = -0.0
    t[1, 1] = 5.0
    t[1, 1] = 0.0
    assert t.nnz == 1 and not t.any() and t.count_nonzero() == 0
    assert bits(t[0, 0]) == bits(np.float32(-0.0))
    assert t.csr().nnz == 1 and t.csr().nonzero().nnz == 0


def test_constructors_round_trip():
    rng = np.random.default_rng(0)
    dense = (rng.normal(size=(40, 33)) * (rng.random((40, 33)) < 0.1)).astype(np.float32)
    dense[3, 4] = -0.0
    for t in (SparseTensor.from_dense(dense, block_elements=100),
              SparseTensor.from_flat(dense.shape, np.flatnonzero(bits(dense)),
                                     dense.reshape(-1)[np.flatnonzero(bits(dense))])):
        assert t.shape == (40, 33) and t.size == 40 * 33 and len(t) == 40
        assert np.array_equal(bits(t.todense()), bits(dense))
        assert np.array_equal(bits(t.dense_rows(5, 12)), bits(dense[5:12]))
        copy = t.copy()
        copy[0, 0] = 9.0
        assert t[0, 0] == dense[0, 0]
    assert SparseTensor.from_dense(np.zeros((0, 4))).shape == (0, 4)
    with pytest.raises(ValueError):
        SparseTensor.zeros((2, 2, 2))


def test_operators_and_ufuncs_act_on_the_dense_matrix():
    dense = np.zeros((6, 7), np.float32)
    dense[2, 3], dense[5, 0] = 4.0, -1.5
    t = SparseTensor.from_dense(dense)
    assert np.array_equal(t != 0, dense != 0)
    assert np.array_equal(t * 2, dense * 2) and np.array_equal(np.abs(t), np.abs(dense))
    assert np.array_equal(np.ones(7, np.float32) @ t.T, np.ones(7, np.float32) @ dense.T)
    assert np.array_equal(np.zeros_like(t), np.zeros_like(dense))
    t *= np.float32(3)
    assert isinstance(t, SparseTensor) and t[2, 3] == 12.0
    version = t.version
    t[0] = 1.0
    assert t.version > version and np.all(t[0] == 1.0)


def test_bad_indexes_raise_like_numpy():
    t = SparseTensor.zeros((3, 4))
    with pytest.raises(IndexError):
        t[3, 0] = 1.0
    with pytest.raises(IndexError):
        t[0, [1, 4]]
    with pytest.raises(ValueError):
        t[0:2, 0:2] = np.ones(3)
    assert np.array_equal(t[None, 1], np.zeros((1, 4)))  # dense fallback
