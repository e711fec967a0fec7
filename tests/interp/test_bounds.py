"""interp.bounds: an access derived from an array argument that leaves the array is a
fault on the interpreter (kind, array, index, lane), also inside the 128 words; accesses
inside every array, and launches without arrays (assembly), are unchanged."""

import numpy as np
import pytest

from qgpu.cuda import compile as compile_cuda
from qgpu.isa.faults import Fault

NEIGHBOUR = "__global__ void k(int *out, int *nb) { out[threadIdx.x] = 7; }\n"


def test_a_write_past_a_one_word_array_into_its_neighbour_faults():
    out, nb = np.zeros(1, np.int32), np.zeros(4, np.int32)
    with pytest.raises(Fault) as err:
        compile_cuda(NEIGHBOUR).get_function("k")(1, 4, (out, nb))
    trap = err.value.trap
    assert trap.kind == "out-of-bounds-global" and trap.lane == 1 and trap.address == 4
    assert "index 1 of array out, which has 1 word" in str(err.value)
    assert not nb.any()  # the neighbour untouched


def test_a_read_before_an_array_faults():
    src = "__global__ void k(int *a, int *b) { b[threadIdx.x] = b[threadIdx.x - 1]; }\n"
    with pytest.raises(Fault, match="index -1 of array b, which has 4 words"):
        compile_cuda(src).get_function("k")(1, 4, (np.ones(4, np.int32),
                                                   np.zeros(4, np.int32)))


def test_an_atomic_past_the_end_faults():
    src = "__global__ void k(int *c, int *d) { atomicAdd(&c[threadIdx.x + 1], 1); }\n"
    with pytest.raises(Fault, match="index 4 of array c"):
        compile_cuda(src).get_function("k")(1, 4, (np.zeros(4, np.int32),
                                                   np.zeros(2, np.int32)))


def test_accesses_inside_their_arrays_run():
    src = ("__global__ void k(const int *a, int *b) {\n"
           "  int t = threadIdx.x; b[t] = a[3 - t] + a[t]; }\n")
    b = np.zeros(4, np.int32)
    compile_cuda(src).get_function("k")(1, 4, (np.arange(4, dtype=np.int32), b))
    assert b.tolist() == [3, 3, 3, 3]


def test_an_aliased_array_is_one_allocation():
    src = "__global__ void k(int *a, int *b) { b[threadIdx.x] = a[threadIdx.x] + 1; }\n"
    a = np.arange(4, dtype=np.int32)
    compile_cuda(src).get_function("k")(1, 4, (a, a))
    assert a.tolist() == [1, 2, 3, 4]
