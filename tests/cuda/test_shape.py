"""cuda.shape: dim3 launches, threadIdx/blockIdx/blockDim/gridDim exact as CUDA numbers
them (x fastest), on the machine's linear ids."""

import itertools

import numpy as np
import pytest

import qgpu
from qgpu.cuda.shape import launch_shape, parse_dims
from qgpu.errors import LaunchError

IDS = """
__global__ void ids(unsigned *out) {
  unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned g = b * (blockDim.x * blockDim.y * blockDim.z) + t;
  out[2 * g] = threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8 | blockIdx.x << 12
             | blockIdx.y << 16 | blockIdx.z << 20;
  out[2 * g + 1] = blockDim.x | blockDim.y << 4 | blockDim.z << 8 | gridDim.x << 12
                 | gridDim.y << 16 | gridDim.z << 20;
}
"""


def expected(grid, block):
    g3, b3 = launch_shape(grid, block).grid, launch_shape(grid, block).block
    out = []
    for bz, by, bx in itertools.product(*(range(n) for n in reversed(g3))):
        for tz, ty, tx in itertools.product(*(range(n) for n in reversed(b3))):
            out += [tx | ty << 4 | tz << 8 | bx << 12 | by << 16 | bz << 20,
                    b3[0] | b3[1] << 4 | b3[2] << 8 | g3[0] << 12 | g3[1] << 16 | g3[2] << 20]
    return out


@pytest.fixture(scope="module")
def ids():
    return qgpu.compile(IDS, engine="interp").get_function("ids")


@pytest.mark.parametrize("grid,block", [
    (1, 4), (2, 5), ((1,), (4, 2)), (2, (2, 2)), ((2, 2), 4), (1, (2, 2, 2)), ((1, 2), (3, 2)),
    (1, (5, 3)), ((1, 1, 3), (2, 2)), ((2, 1, 2), (1, 4)), (1, (1, 1, 16))])
def test_ids_are_cudas(ids, grid, block):
    shape = launch_shape(grid, block)
    out = np.zeros(2 * shape.ctas * shape.threads, np.uint32)
    ids(grid, block, [out])
    assert list(out) == expected(grid, block)


def test_a_1d_launch_reads_y_and_z_as_0_and_1(ids):
    out = np.zeros(8, np.uint32)
    ids(1, 4, [out])
    assert list(out[::2]) == [0, 1, 2, 3] and set(out[1::2]) == {4 | 1 << 4 | 1 << 8 | 1 << 12
                                                                  | 1 << 16 | 1 << 20}


def test_shapes_beyond_the_machine_are_refused_naming_the_shape(ids):
    with pytest.raises(LaunchError, match=r"block \(32,33\) \(1 CTAs of 1056 threads\)"):
        ids(1, (32, 33), [np.zeros(40, np.uint32)])
    with pytest.raises(LaunchError, match="at least 1"):
        ids(1, (4, 0), [np.zeros(4, np.uint32)])


def test_command_line_dims():
    assert parse_dims("2,2", "grid") == (2, 2, 1) and parse_dims("4x2x1", "block") == (4, 2, 1)
    with pytest.raises(LaunchError, match="--grid 'a'"):
        parse_dims("a", "grid")


def test_launch_bounds_are_enforced():
    k = qgpu.compile("__global__ void __launch_bounds__(2) k(int *a) { a[threadIdx.x] = 1; }",
                     "lb.cu", engine="interp").get_function("k")
    a = np.zeros(4, np.int32)
    k(2, 2, [a])
    assert list(a) == [1, 1, 0, 0]
    with pytest.raises(LaunchError, match=r"lb.cu:1: kernel k has __launch_bounds__\(2\)"):
        k(1, (2, 2), [a])
