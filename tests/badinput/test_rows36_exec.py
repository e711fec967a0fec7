"""Issue 36's rows of the front end and interpreter: each kernel runs exactly (checked
against numpy) or faults with a clear error, on the interpreter."""

import numpy as np
import pytest

import qgpu
from qgpu.isa.faults import Fault

from .test_rows import one_error

SHUFFLES = r'''
__global__ void fdown(const float *a, float *o) {
  o[threadIdx.x] = __shfl_down_sync(0xffffffffu, a[threadIdx.x], 1);
}
__global__ void lxor(const long long *a, long long *o) {
  o[threadIdx.x] = __shfl_xor_sync(0xffffffffu, a[threadIdx.x], 1);
}
'''


def test_float_and_64_bit_shuffles_are_not_ambiguous():
    module = qgpu.compile(SHUFFLES, engine="interp")
    a = np.array([1.5, -2.25, 3e10, -0.0], np.float32)
    o = np.zeros(4, np.float32)
    module.get_function("fdown")(1, 4, [a, o])
    # lanes past the warp's end keep their own value, as CUDA's shfl.down
    assert o.tobytes() == np.array([a[1], a[2], a[3], a[3]], np.float32).tobytes()
    b = np.array([-5, 1 << 40, -(1 << 50) + 3, 7], np.int64)
    p = np.zeros(4, np.int64)
    module.get_function("lxor")(1, 4, [b, p])
    assert p.tolist() == b[[1, 0, 3, 2]].tolist()


SIGN = r'''
__global__ void s32(const long long *a, long long *o) {
  long long v = a[threadIdx.x] * 3 + a[0];
  o[threadIdx.x] = (long long)(int)v;
}
__global__ void s16(const long long *a, long long *o) {
  long long v = a[threadIdx.x] * 3 + a[0];
  o[threadIdx.x] = (long long)(short)v + (long long)(signed char)(v >> 8);
}
'''


def test_int_cast_of_a_64_bit_value_sign_extends():
    module = qgpu.compile(SIGN, engine="interp")
    a = np.array([-5, (1 << 32) + 0x7FFFFFF0, 0x80000000, -(1 << 40) + 12345], np.int64)
    v = a * 3 + a[0]
    want = {"s32": v.astype(np.int32).astype(np.int64),
            "s16": v.astype(np.int16).astype(np.int64) + (v >> 8).astype(np.int8)}
    for name, expected in want.items():
        out = np.zeros(4, np.int64)
        module.get_function(name)(1, 4, [a, out])
        assert out.tolist() == expected.tolist(), name


LONG_PARAMS = r'''
__global__ void both(long long big, int *o) { o[threadIdx.x] = (int)big + (int)(big >> 32); }
__global__ void high(long long big, int *o) { o[threadIdx.x] = (int)(big >> 32); }
__global__ void wide(unsigned long long big, long long *o) {
  o[threadIdx.x] = (long long)(big >> 32) * 3 + (unsigned)big;
}
'''


def _low_high(v: int) -> tuple[int, int]:
    u = v & ((1 << 64) - 1)
    return int(np.uint32(u & 0xFFFFFFFF).astype(np.int32)), int(np.int64(np.uint64(u)) >> 32)


def test_long_long_parameter_halves_run_exactly():
    module = qgpu.compile(LONG_PARAMS, engine="interp")
    for big in (-(1 << 40) + 7, (1 << 35) + 0x80000001, -1, 5):
        low, high = _low_high(big)
        out = np.zeros(4, np.int32)
        module.get_function("both")(1, 4, [big, out])
        assert out.tolist() == [int(np.int32(np.int64(low + high)))] * 4, big
        module.get_function("high")(1, 4, [big, out])
        assert out.tolist() == [high] * 4, big
    out64 = np.zeros(4, np.int64)
    big = (1 << 63) + 5
    module.get_function("wide")(1, 4, [big, out64])
    assert out64.tolist() == [(big >> 32) * 3 + (big & 0xFFFFFFFF)] * 4


EXTERN = r'''
__global__ void k(int *o) {
  extern __shared__ int s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  o[threadIdx.x] = s[3 - threadIdx.x];
}
'''


def test_extern_shared_is_bounded_by_the_launch_size(tmp_path, capsys):
    src = tmp_path / "k.cu"
    src.write_text(EXTERN)
    argv = ["run", str(src), "--grid", "1", "--block", "4", "--arg", "o=zeros:4",
            "--engine", "interp"]
    err = one_error(capsys, "run", [*argv, "--shared-bytes", "3"])
    assert "out-of-bounds shared access at byte address 4" in err
    assert "the launch has 1 word of shared memory" in err
    kernel = qgpu.compile(EXTERN, engine="interp").get_function("k")
    out = np.zeros(4, np.int32)
    with pytest.raises(Fault, match="the launch has 3 words of shared memory"):
        kernel(1, 4, [out], shared_mem=12)
    kernel(1, 4, [out], shared_mem=16)
    assert out.tolist() == [3, 2, 1, 0]


PRINTS = r'''
#include <cstdio>
__global__ void k(int *o, int n) {
  o[threadIdx.x + n] = 999;
  if (threadIdx.x == 0) printf("hello %d\n", 5);
}
'''


@pytest.mark.parametrize("word, where", [(4, "a free word"), (6, "the printf buffer"),
                                         (8, "the printf buffer")])
def test_host_guard_names_a_changed_word_no_array_owns(word, where):
    """The model's final memory with a store past `o` (as the model writes it: its fault
    detector bounds only the 128 words) is refused by the host after the launch."""
    from qgpu.cuda.guard import check_untouched
    kernel = qgpu.compile(PRINTS, engine="interp").get_function("k")
    out = np.zeros(4, np.int32)
    prep = kernel.prepare(1, 4, [out, 0])
    assert prep.program.free_words == (4,)          # the guard before the printf buffer
    result = kernel(1, 4, [out, 0])
    final = list(result.memory)
    check_untouched(prep, final, lambda: None)      # a clean launch passes
    final[word] = 999
    copied = []
    with pytest.raises(qgpu.errors.MachineError, match=f"global word {word} \\({where}.*"
                       "past array o.*--check or --engine interp"):
        check_untouched(prep, final, lambda: copied.append(1))
    assert copied == [1]
