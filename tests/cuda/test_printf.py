"""cuda.printf: format strings, the host's formatting of records against the C library's
own printf (snprintf through ctypes: the text a C program prints for the same double or
int), the buffer's reading, overflow and assert records."""

import ctypes
import struct

import numpy as np
import pytest

from qgpu.cuda.printf import (
    ASSERT_FLAG,
    Arg,
    Buffer,
    Conv,
    Site,
    format_record,
    parse_format,
)
from qgpu.errors import CompileError

_LIBC = ctypes.CDLL(None)


def c_printf(fmt: bytes, *values) -> bytes:
    buf = ctypes.create_string_buffer(512)
    _LIBC.snprintf(buf, 512, fmt, *values)
    return buf.value


def site_for(fmt: bytes) -> Site:
    pieces = parse_format(fmt, "t.cu:1")
    convs = [p for p in pieces if isinstance(p, Conv)]
    return Site(0, "t.cu:1", tuple(pieces), tuple(Arg(word=k) for k in range(len(convs))),
                len(convs))


def f32_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


FLOAT_SPECS = [b"%f", b"%e", b"%g", b"%E", b"%G", b"%F", b"%.0f", b"%.3e", b"%10.4f",
               b"%-12.2e|", b"%+g", b"% f", b"%#g", b"%#.0f", b"%012.3f", b"%.9g", b"%.20f"]
EDGE_FLOATS = [0.0, -0.0, 1.0, -1.5, 0.125, 2.5, 1e-45, 3.4028235e38, 1.17549435e-38, 0.1,
               123456.789, float("inf"), float("-inf"), 9.5, 0.5, 1e10, 65504.0]


@pytest.mark.parametrize("spec", FLOAT_SPECS)
def test_floats_print_as_c_prints_their_double(spec):
    rng = np.random.default_rng(len(spec))
    values = EDGE_FLOATS + [float(np.float32(v)) for v in rng.normal(0, 1e3, 60)] + [
        float(v) for v in rng.integers(0, 2**32, 40, dtype=np.uint64).astype(np.uint32)
        .view(np.float32) if np.isfinite(v)]
    site = site_for(spec)
    for v in values:
        want = c_printf(spec, ctypes.c_double(float(np.float32(v))))
        assert format_record(site, [f32_bits(v)]) == want, (spec, v)


def test_nan_prints_as_glibc_prints_it():
    for spec in (b"%f", b"%8.2e|", b"%-6G|", b"%+f"):
        site = site_for(spec)
        for bits in (0x7FC00000, 0xFFC00000, 0x7F800001):
            v = struct.unpack("<f", struct.pack("<I", bits))[0]
            assert format_record(site, [bits]) == c_printf(spec, ctypes.c_double(v))


INT_SPECS = [b"%d", b"%i", b"%u", b"%x", b"%X", b"%o", b"%5d|", b"%-5d|", b"%05d", b"%+d",
             b"% d", b"%#x", b"%#o", b"%.3d", b"%8.4x", b"%hd", b"%hu", b"%hhd", b"%hhx",
             b"%c", b"%3c|", b"%-3c|", b"%08.3d", b"%#05o", b"%#08x", b"%.0d|", b"%-+6d|",
             b"%#.0o", b"%0-6x|"]


@pytest.mark.parametrize("spec", INT_SPECS)
def test_ints_print_as_c_prints_them(spec):
    rng = np.random.default_rng(len(spec) + 7)
    words = [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 65, 255, 256, 0x8000, 0xFFFF] + [
        int(w) for w in rng.integers(0, 2**32, 50, dtype=np.uint64)]
    site = site_for(spec)
    for w in words:
        if spec.endswith(b"c") or spec.endswith(b"c|"):
            w &= 0x7F
            if w == 0:
                continue      # snprintf's buffer stops at the NUL it prints
        want = c_printf(spec, ctypes.c_uint32(w))
        assert format_record(site, [w]) == want, (spec, hex(w))


def test_literals_percent_and_constant_arguments():
    pieces = parse_format(b"%s=%d%% of %5.1f [%-4s]\n", "t.cu:1")
    site = Site(0, "t.cu:1", tuple(pieces),
                (Arg(const=b"load"), Arg(word=0), Arg(const=2.25), Arg(const=b"ab")), 1)
    assert format_record(site, [42]) == b"load=42% of   2.2 [ab  ]\n"


@pytest.mark.parametrize("fmt,match", [
    (b"%ld", "'%ld' prints a 64-bit value"),
    (b"%llu", "'%llu' prints a 64-bit value"),
    (b"%zu", "'%zu' prints a 64-bit value"),
    (b"%*d", r"\(\*\) is not supported"),
    (b"%.*f", r"\(\*\) is not supported"),
    (b"%p", "'%p' is not supported"),
    (b"%n", "'%n' is not supported"),
    (b"%a", "'%a' is not supported"),
    (b"%Lf", "'%Lf' prints a 64-bit value"),
    (b"tail %", "incomplete conversion '%'"),
])
def test_formats_qgpu_cannot_print_are_refused_with_the_line(fmt, match):
    with pytest.raises(CompileError, match=match) as exc:
        parse_format(fmt, "k.cu:7")
    assert str(exc.value).startswith("k.cu:7: ")


def _buffer(sites, records, words=16):
    mem = [0] * 128
    first = 128 - words
    pos = 0
    for rec in records:
        mem[first + 1 + pos:first + 1 + pos + len(rec)] = rec
        pos += len(rec)
    mem[first] = pos
    return Buffer(first, words, sites, room=first + words), mem   # the rest of memory free


def test_the_buffer_reads_records_in_order_and_reports_overflow():
    s0, s1 = site_for(b"a=%d\n"), site_for(b"%x,%x\n")
    s1 = Site(1, s1.where, s1.pieces, s1.args, s1.words)
    buf, mem = _buffer([s0, s1], [[1, 5], [2, 10, 11], [1, 0xFFFFFFFF]])
    text, failed, overflow = buf.read(mem, "k")
    assert text == "a=5\na,b\na=-1\n" and failed is None and overflow is None
    # 15 words of records fit; a 2-word record did not (the kernel skipped it, its counter
    # says 17): the records that fit, and the size that would have held everything
    buf, mem = _buffer([s0, s1], [[2, 1, 2], [1, 3], [2, 4, 5], [1, 6], [2, 7, 8], [1, 9]])
    assert buf.capacity == 15
    mem[buf.first] = 17
    text, _, overflow = buf.read(mem, "k")
    assert text == "1,2\na=3\n4,5\na=6\n7,8\na=9\n"
    assert "--printf-words 18" in str(overflow) and "printf_words=18" in str(overflow)


def test_an_assert_record_names_the_first_failing_thread():
    a = Site(1, "k.cu:9", assertion=("x > 0", "kern"))
    buf, mem = _buffer([site_for(b"hi\n"), a], [[1], [ASSERT_FLAG | 2, (2 << 16) | 5, 77],
                                                [ASSERT_FLAG | 2, 3, 0], [1]])
    text, failed, _ = buf.read(mem, "k")
    assert text == "hi\nhi\n" and failed == (a, (2 << 16) | 5)
    # a zero header ends the records (words reserved by a record that did not fit)
    mem[buf.first + 2] = 0
    assert buf.read(mem, "k")[:2] == ("hi\n", None)
