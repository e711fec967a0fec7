"""Issue 36's memory rows the interpreter ran silently where a GPU faults (or
compute-sanitizer's memcheck reports): an 8/16-bit access past an array's last byte but
inside its last word (the machine's memory is words; the bounds are the array's bytes), a
misaligned 8-byte (long long, int2) or 16-bit access, and a read past a __constant__ (or
__device__) array. Each faults naming what is wrong; the in-bounds case runs exactly."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import CheckMismatch
from qgpu.isa.faults import Fault

SOURCE = r"""
__global__ void st8(unsigned char *a, int i) { a[i] = 7; }
__global__ void ld8(int *o, const signed char *a, int i) { o[0] = a[i]; }
__global__ void st16(short *a, int i) { a[i] = -3; }
__global__ void ld16(int *o, const unsigned short *a, int i) { o[0] = a[i]; }
__global__ void ld16_at(int *o, const short *a, int byte) {
  o[0] = *(const short *)((const char *)a + byte);
}
__global__ void ld64(long long *o, const int *a, int i) {
  o[0] = ((const long long *)(a + i))[0];
}
__global__ void st64(int *a, int i, long long v) { ((long long *)(a + i))[0] = v; }
__global__ void copy2(int *o, const int *a, int i) {
  ((int2 *)(o + i))[0] = ((const int2 *)(a + i))[0];
}
__shared__ long long s[4];
__global__ void shared64(long long *o, int i) {
  s[threadIdx.x] = 3 * threadIdx.x;
  __syncthreads();
  o[0] = *(long long *)((int *)s + i);
}
__constant__ int tab[4] = {10, 20, 30, 40};
__global__ void cst(int *o, int i) { o[0] = tab[i]; }
__constant__ unsigned char bytes[5] = {1, 2, 3, 4, 5};
__global__ void cst8(int *o, int i) { o[0] = bytes[i]; }
__device__ int dev[3];
__global__ void devst(int *o, int i) { dev[i] = 5; o[0] = dev[0]; }
"""


@pytest.fixture(scope="module")
def module():
    return qgpu.compile(SOURCE, engine="interp")


def run(module, name, *args, block=1):
    module.get_function(name)(1, block, list(args))
    return args


def test_a_byte_past_the_array_inside_its_last_word_faults(module):
    a = np.zeros(5, np.uint8)
    run(module, "st8", a, 4)
    assert a.tolist() == [0, 0, 0, 0, 7]
    for i in (5, 7):
        with pytest.raises(Fault, match=f"out-of-bounds global access at byte address {i} "
                                        rf".*: byte {i} of array a, which has 5 bytes"):
            run(module, "st8", np.zeros(5, np.uint8), i)
    o = np.zeros(1, np.int32)
    run(module, "ld8", o, np.array([1, -2, 3, -4, -5], np.int8), 4)
    assert o.tolist() == [-5]
    with pytest.raises(Fault, match="byte 6 of array a, which has 5 bytes"):
        run(module, "ld8", o, np.zeros(5, np.int8), 6)


def test_a_halfword_past_the_array_faults_naming_its_index(module):
    a = np.zeros(3, np.int16)
    run(module, "st16", a, 2)
    assert a.tolist() == [0, 0, -3]
    with pytest.raises(Fault, match=r"index 3 \(byte 6\) of array a, which has 3 elements "
                                    r"of 2 bytes \(6 bytes from global word 0\)"):
        run(module, "st16", a, 3)
    o = np.zeros(1, np.int32)
    run(module, "ld16", o, np.array([1, 2, 65535], np.uint16), 2)
    assert o.tolist() == [65535]
    with pytest.raises(Fault, match=r"index 3 \(byte 6\) of array a, which has 3 elements"):
        run(module, "ld16", o, np.zeros(3, np.uint16), 3)


def test_a_misaligned_halfword_load_faults(module):
    """In the machine itself, as a 16-bit store does: the word address keeps bit 0 (byte
    7, a's byte 3, is word address 5), so the model faults alike."""
    o = np.zeros(1, np.int32)
    run(module, "ld16_at", o, np.array([5, -6, 7, 8], np.int16), 2)
    assert o.tolist() == [-6]
    with pytest.raises(Fault, match=r"misaligned global access at byte address 5 \(ld.global"):
        run(module, "ld16_at", o, np.zeros(4, np.int16), 3)


def test_a_misaligned_long_long_access_faults(module):
    o = np.zeros(1, np.int64)
    a = np.arange(1, 5, dtype=np.int32)
    run(module, "ld64", o, a, 2)
    assert o.tolist() == [3 + (4 << 32)]
    # o takes words 0-1, a starts at byte 8: a + 1 is byte 12, 4 past an 8-byte boundary
    with pytest.raises(Fault, match="misaligned global access at byte address 12 .*an "
                                    r"8-byte \(long long, int2\) access must be 8-byte aligned"):
        run(module, "ld64", o, a, 1)
    b = np.zeros(4, np.int32)
    run(module, "st64", b, 2, -2)
    assert b.tolist() == [0, 0, -2, -1]
    with pytest.raises(Fault, match="misaligned global access at byte address 4 .*8-byte "
                                    "aligned"):
        run(module, "st64", b, 1, 5)


def test_a_misaligned_int2_copy_faults(module):
    o, a = np.zeros(8, np.int32), np.arange(8, dtype=np.int32)
    run(module, "copy2", o, a, 2)
    assert o.tolist() == [0, 0, 2, 3, 0, 0, 0, 0]
    with pytest.raises(Fault, match="misaligned global access .*8-byte aligned"):
        run(module, "copy2", o, a, 1)


def test_a_misaligned_shared_long_long_faults(module):
    o = np.zeros(1, np.int64)
    run(module, "shared64", o, 2, block=4)
    assert o.tolist() == [3]
    with pytest.raises(Fault, match="misaligned shared access at byte address 4 .*8-byte"):
        run(module, "shared64", o, 1, block=4)


def test_a_read_past_a_constant_array_faults_naming_it(module):
    o = np.zeros(1, np.int32)
    for i in range(4):
        run(module, "cst", o, i)
        assert o.tolist() == [10 * (i + 1)]
    for i in (4, 5, -1):
        with pytest.raises(Fault, match=f"index {i} of array tab, which has 4 words"):
            run(module, "cst", o, i)
    run(module, "cst8", o, 4)
    assert o.tolist() == [5]
    with pytest.raises(Fault, match="byte 5 of array bytes, which has 5 bytes"):
        run(module, "cst8", o, 5)


def test_a_write_past_a_device_array_faults_naming_it(module):
    o = np.zeros(1, np.int32)
    run(module, "devst", o, 0)
    assert o.tolist() == [5]
    with pytest.raises(Fault, match="index 3 of array dev, which has 3 words"):
        run(module, "devst", o, 3)


def test_the_cli_says_it_in_one_line(tmp_path, capsys):
    from qgpu.cli import main

    path = tmp_path / "k.cu"
    path.write_text("__global__ void k(unsigned char *a, int i) { a[i] = 7; }\n")
    assert main(["run", str(path), "--grid", "1", "--block", "1", "--arg", "a=u8:zeros:5",
                 "--arg", "i=6", "--engine", "interp"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "byte 6 of array a, which has 5 bytes" in err


@pytest.mark.slow
def test_a_misaligned_halfword_load_faults_on_the_model_alike():
    """The 16-bit load's fault is the machine's own code: --check finds the model's TRAP
    equal to the interpreter's."""
    src = """__global__ void k(int *o, const short *a, int byte) {
  o[threadIdx.x] = *(const short *)((const char *)a + byte + 2 * threadIdx.x);
}"""
    k = qgpu.compile(src).get_function("k")
    o, a = np.zeros(4, np.int32), np.arange(1, 9, dtype=np.int16)
    k(1, 4, [o, a, 2], engine="model-check")
    assert o.tolist() == [2, 3, 4, 5]
    with pytest.raises(Fault, match=r"misaligned global access at byte address 17 \(ld.global"):
        k(1, 4, [o, a, 3], engine="model-check")


@pytest.mark.slow
def test_a_misaligned_long_long_is_a_check_mismatch_on_the_model():
    """The model's fault detector sees two aligned words: --check names the interpreter's
    alignment check at its TRAP."""
    src = """__global__ void k(long long *o, const int *a, int i) {
  o[0] = ((const long long *)(a + i))[0];
}"""
    k = qgpu.compile(src).get_function("k")
    o, a = np.zeros(1, np.int64), np.arange(1, 5, dtype=np.int32)
    k(1, 1, [o, a, 2], engine="model-check")
    assert o.tolist() == [3 + (4 << 32)]
    with pytest.raises(CheckMismatch, match=r"TRAP\(misaligned-global.*the interpreter's "
                                            r"alignment check: an 8-byte"):
        k(1, 1, [o, a, 1], engine="model-check")
