"""Issue 36's shared-memory rows: the interpreter bounds a launch's shared memory by its
own size (static __shared__ data + the extern array's --shared-bytes), not only by the
machine's 32 words: `--shared-bytes 3` with a kernel indexing 16 bytes of its extern
array, and a read past a static __shared__ array, fault naming the launch's size."""

import numpy as np
import pytest

import qgpu
from qgpu.isa.faults import Fault

EXTERN = """__global__ void k(int *o) {
  extern __shared__ int buf[];
  buf[threadIdx.x] = threadIdx.x + 1;
  __syncthreads();
  o[threadIdx.x] = buf[3 - threadIdx.x];
}
"""
STATIC = """__global__ void k(int *o, int i) {
  __shared__ int s[4];
  s[threadIdx.x] = 7;
  __syncthreads();
  o[threadIdx.x] = s[i];
}
"""


def run(src, *args, shared_mem=0, block=4):
    out = np.zeros(4, np.int32)
    qgpu.compile(src, engine="interp").get_function("k")(1, block, [out, *args],
                                                         shared_mem=shared_mem)
    return out


def test_an_extern_array_past_its_launch_size_faults():
    with pytest.raises(Fault, match="the launch has 1 word of shared memory"):
        run(EXTERN, shared_mem=3)
    assert run(EXTERN, shared_mem=16).tolist() == [4, 3, 2, 1]


def test_a_read_past_a_static_shared_array_faults():
    assert run(STATIC, 3).tolist() == [7] * 4
    with pytest.raises(Fault, match="out-of-bounds shared access at byte address 20"):
        run(STATIC, 5)


def test_the_cli_says_it_in_one_line(tmp_path, capsys):
    from qgpu.cli import main

    path = tmp_path / "k.cu"
    path.write_text(EXTERN)
    assert main(["run", str(path), "--grid", "1", "--block", "4", "--arg", "o=zeros:4",
                 "--shared-bytes", "3", "--engine", "interp"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--shared-bytes" in err
