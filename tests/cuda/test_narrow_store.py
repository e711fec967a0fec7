"""cuda.select._narrow_store: st.{u,s,b}{8,16} as a load and compare-and-swap loop on the
aligned word, on the interpreter: every byte and half of a word, lanes writing different
bytes of one word in the same instruction (no byte lost), lanes writing the same byte
(the highest lane's value, as for words), global and shared memory, and the fault of a
16-bit store at an odd address."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import MachineError
from tests.cuda.helpers import launch, u32

BYTES = """
__global__ void k(unsigned *out, const int *in) {
  unsigned char *o = (unsigned char *)out;
  unsigned short *h = (unsigned short *)(out + 4);
  signed char *s = (signed char *)(out + 12);
  int i = threadIdx.x;
  o[i] = (unsigned char)(in[i] * 3 + 1);
  h[i] = (unsigned short)(in[i] * 1000 + 7);
  s[i] = (signed char)(-in[i]);
}
"""


def test_lanes_write_every_byte_and_half_of_shared_words():
    rng = np.random.default_rng(5)
    src = rng.integers(-(1 << 31), 1 << 31, 16).astype(np.int32)
    for n in (16, 13, 5):                     # whole words, and words left partly alone
        out = u32([0xA5A5A5A5] * 16)
        launch(BYTES, "k", 1, n, out, src)
        want = np.full(64, 0xA5, np.uint8)
        i = src[:n].astype(np.int64)
        want[:n] = (i * 3 + 1) & 255
        halves = want[16:48].view(np.uint16)
        halves[:n] = (i * 1000 + 7) & 0xFFFF
        want[48:48 + n] = (-i) & 255
        assert out.view(np.uint8).tolist() == want.tolist(), n


def test_lanes_writing_one_byte_leave_the_highest_lanes_value():
    src = """__global__ void k(unsigned *out) {
      ((unsigned char *)out)[threadIdx.x / 4 + 1] = (unsigned char)(threadIdx.x + 16); }"""
    out = u32([0x11223344, 0x55667788])
    launch(src, "k", 1, 8, out)
    assert out.view(np.uint8).tolist() == [0x44, 16 + 3, 16 + 7, 0x11, 0x88, 0x77, 0x66, 0x55]


def test_shared_memory_bytes():
    src = """__global__ void k(unsigned *out) {
      __shared__ unsigned char s[16];
      int i = threadIdx.x;
      s[i] = (unsigned char)(i * 17);
      __syncthreads();
      out[i] = s[15 - i] + 1000 * s[i];
    }"""
    out = u32([0] * 16)
    launch(src, "k", 1, 16, out)
    assert out.tolist() == [(15 - i) * 17 % 256 + 1000 * (i * 17 % 256) for i in range(16)]


def test_bool_stores():
    src = """__global__ void k(unsigned *out, const int *in) {
      ((bool *)out)[threadIdx.x] = in[threadIdx.x] > 2; }"""
    out, inp = u32([0xFFFFFFFF] * 2), u32([1, 5, 3, 0, 9, 2, 7, 8])
    launch(src, "k", 1, 8, out, inp)
    assert out.view(np.uint8).tolist() == [0, 1, 1, 0, 1, 0, 1, 1]


def test_a_16_bit_store_at_an_odd_address_faults():
    src = """__global__ void k(unsigned *out, const int *in) {
      *(unsigned short *)((char *)out + in[0]) = 7; }"""
    out = u32([0] * 2)
    launch(src, "k", 1, 1, out, u32([2]))
    assert out.tolist() == [7 << 16, 0]
    with pytest.raises(MachineError, match="misaligned"):
        launch(src, "k", 1, 1, out, u32([3]))


def test_char_bool_short_parameters_copy_back_with_their_dtype():
    src = """__global__ void k(unsigned char *px, const int *in, bool *flag, short *h) {
      int i = threadIdx.x;
      px[i] = (unsigned char)(in[i] * 3 + 1);
      flag[i] = in[i] > 2;
      h[i] = (short)(-in[i] * 1000);
    }"""
    kernel = qgpu.compile(src, engine="interp").get_function("k")
    inp = np.array([1, 2, 3, 4, 5, 6, 7, 300, -9], np.int32)
    px, flag, h = np.zeros(9, np.uint8), np.ones(9, np.bool_), np.zeros(9, np.int16)
    kernel(1, 9, (px, inp, flag, h))
    i = inp.astype(np.int64)
    assert px.dtype == np.uint8 and px.tolist() == ((i * 3 + 1) & 255).tolist()
    assert flag.dtype == np.bool_ and flag.tolist() == (i > 2).tolist()
    assert h.dtype == np.int16 and h.tolist() == (-i * 1000).astype(np.int16).tolist()
