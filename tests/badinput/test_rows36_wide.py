"""Issue 36's `long long` rows: a long long parameter's high word (`(int)(big >> 32)`,
which clang reads as `ld.param.u32 [param+4]` or unpacks with `mov.b64 {tmp, %r}` in an
inline PTX scope) runs exactly instead of an IndexError or a refusal, and a 32-bit signed
load into a 64-bit register sign-extends (`(long long)(int)v` gave 4294967291 for -5)."""

import numpy as np
import pytest

import qgpu

SOURCE = """__global__ void both(int *o, long long big) {
  o[threadIdx.x] = (int)big + (int)(big >> 32);
}
__global__ void high(int *o, long long big) {
  o[threadIdx.x] = (int)(big >> 32);
}
__global__ void widen(long long *o, long long v) {
  o[threadIdx.x] = (long long)(int)v;
}
__global__ void widen_computed(long long *o, const long long *in) {
  long long w = in[threadIdx.x] * 3;
  o[threadIdx.x] = (long long)(int)w;
}
"""
BIG = [0x300000005, -8589934587, -1, 0x7FFFFFFF00000000, 0]


def kernel(name):
    return qgpu.compile(SOURCE, engine="interp").get_function(name)


def words(big):
    u = big & (2**64 - 1)
    return np.int64(u & 0xFFFFFFFF).astype(np.uint32).view(np.int32), \
        np.uint32(u >> 32).view(np.int32)


@pytest.mark.parametrize("big", BIG)
def test_a_long_long_parameters_words(big):
    lo, hi = words(big)
    out = np.zeros(2, np.int32)
    kernel("both")(1, 2, [out, big])
    assert out.tolist() == [int(np.int32(np.int64(lo) + np.int64(hi)))] * 2
    kernel("high")(1, 2, [out, big])
    assert out.tolist() == [int(hi)] * 2


@pytest.mark.parametrize("v", [-5, 0x1FFFFFFFB, 7, -(2**31), 2**31 - 1])
def test_int_to_long_long_sign_extends(v):
    out = np.zeros(2, np.int64)
    kernel("widen")(1, 2, [out, v])
    assert out.tolist() == [int(np.int64(v & 0xFFFFFFFF).astype(np.uint32).view(np.int32))] * 2


def test_a_computed_value_narrowed_and_widened():
    data = np.array([-5, 0x7FFFFFFF, 0x1FFFFFFFB], np.int64)
    out = np.zeros(3, np.int64)
    kernel("widen_computed")(1, 3, [out, data])
    assert out.tolist() == (data * 3).astype(np.int32).astype(np.int64).tolist()


def test_the_list_says_the_kernels_run(tmp_path, capsys):
    from qgpu.cli import main

    path = tmp_path / "wide.cu"
    path.write_text(SOURCE)
    assert main(["run", str(path), "--list"]) == 0
    out = capsys.readouterr().out
    assert out.count("runs") >= 4 and "cannot run" not in out


def test_float_and_long_long_shuffles_are_not_ambiguous():
    src = """__global__ void k(float *o, long long *q, unsigned long long *u, const float *a,
                      const long long *b) {
  int i = threadIdx.x;
  o[i] = __shfl_down_sync(0xffffffff, a[i], 1);
  q[i] = __shfl_xor_sync(0xffffffff, b[i], 1);
  u[i] = __shfl_sync(0xffffffff, (unsigned long long)b[i], 3);
}
"""
    a = np.array([1.5, 2.5, -3.0, np.inf], np.float32)
    b = np.array([1, -2, 0x300000000, -(2**40)], np.int64)
    o, q, u = np.zeros(4, np.float32), np.zeros(4, np.int64), np.zeros(4, np.uint64)
    qgpu.compile(src, engine="interp").get_function("k")(1, 4, [o, q, u, a, b])
    assert o.tolist() == [2.5, -3.0, np.inf, np.inf]
    assert q.tolist() == [-2, 1, -(2**40), 0x300000000]
    assert u.tolist() == [int(b[3]) & (2**64 - 1)] * 4
