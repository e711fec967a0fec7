"""cuda.printf: device printf and assert as data: format strings, call sites, the buffer.

CUDA's printf appends a record to a buffer in device memory and the host formats the
records after the launch; qgpu does the same with a buffer carved from the top of the
machine's global memory (`Buffer`: a counter word, then records). A record is the call
site's id + 1 (a zero word ends the records) followed by its argument words, in the
order the model wrote them (lanes of a warp in lane order, warps in the order the machine
ran them): the model computes every
value, the host only turns the words into text, as C's printf would. A string argument
(`%s`) must be a literal: it is the site's, known at compile time, and costs no word. A
float passed to printf is promoted to double; the record keeps its f32 bits (the
conversion to double is exact) and the host formats that double.

An assert's record is its site id (ASSERT_FLAG set), the failing thread's ids and the word
its trap load read (kept so that the load is not dead code); with the
fault detector the failing lane's load at `trap_address(id)` faults first, so the model
itself writes the TRAP record that names the assert (cuda.devcalls emits both).
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field

from qgpu.errors import CompileError, LaunchError, MachineError

ASSERT_FLAG = 0x8000_0000        # header word of an assert record: flag | site id
TRAP_BASE = 0xA550_0000          # the failing lane loads TRAP_BASE + 4 * id: out of bounds
_INT_CONV = set("diouxXc")
_FLOAT_CONV = set("fFeEgG")
MAX_FIELD = 4096                 # the widest field width or precision a format may give
_SPEC = re.compile(rb"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L|q)?(.)", re.S)


class KernelAssertion(MachineError):
    """A device assert failed: file:line, the kernel, the thread and the condition."""

    def __init__(self, message: str, printed: str = ""):
        super().__init__(message)
        self.printed = printed     # what the launch printed before the assert


class PrintfOverflow(LaunchError):
    """The printf buffer was too small: the message gives the size needed (or says that
    the machine's global memory cannot hold it)."""

    def __init__(self, message: str, printed: str = ""):
        super().__init__(message)
        self.printed = printed     # the records that fitted


class PrintfOverwritten(PrintfOverflow):
    """The printf buffer's counter holds what no printf of the launch wrote: the kernel
    stored over the buffer (past the end of an array)."""


@dataclass(frozen=True)
class Conv:
    """One conversion of a format string: its text (`%5.2f`), letter, length modifier."""
    text: bytes
    letter: str
    length: str = ""

    @property
    def kind(self) -> str:
        """The vararg it consumes: int (4 bytes), double (8) or str (a pointer)."""
        return "double" if self.letter in _FLOAT_CONV else (
            "str" if self.letter == "s" else "int")


def parse_format(fmt: bytes, where: str) -> list[bytes | Conv]:
    """A format string as literal pieces and conversions; CompileError (naming `where`) for
    what qgpu cannot print exactly."""
    out: list[bytes | Conv] = []
    pos = 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, letter = m.groups()
        conv = letter.decode("latin-1")
        if conv == "%" and not (flags or width or prec or length):
            out.append(b"%")
            continue
        text = m.group(0).decode("latin-1", "replace")
        if width == b"*" or prec == b"*":
            raise CompileError(f"{where}: printf conversion '{text}': a width or precision "
                               "taken from the arguments (*) is not supported; write the "
                               "number in the format")
        if max(int(width or 0), int(prec or 0)) > MAX_FIELD:
            raise CompileError(f"{where}: printf conversion '{text[:40]}': a width or "
                               f"precision above {MAX_FIELD} characters is not supported "
                               "(CUDA's printf buffer is small too)")
        length = (length or b"").decode()
        if length in ("l", "ll", "j", "z", "t", "q", "L") and conv not in "s":
            raise CompileError(f"{where}: printf conversion '{text}' prints a 64-bit value; "
                               "qgpu's values are 32 bits: use %d, %u or %x of an int")
        if conv not in _INT_CONV | _FLOAT_CONV | {"s"} or (length and conv in _FLOAT_CONV):
            raise CompileError(f"{where}: printf conversion '{text}' is not supported (qgpu "
                               "prints %d %i %u %o %x %X %c %s %f %F %e %E %g %G with flags, "
                               "width and precision)")
        out.append(Conv(m.group(0), conv, length))
    tail = fmt[pos:]
    if b"%" in tail:
        raise CompileError(f"{where}: printf format ends with an incomplete conversion "
                           f"'{tail[tail.index(b'%'):].decode('latin-1')}'")
    out.append(tail)
    return [p for p in out if p != b""]


@dataclass(frozen=True)
class Arg:
    """Where a conversion's value comes from: word k of the record, or a constant."""
    word: int | None = None
    const: bytes | float | int | None = None


@dataclass(frozen=True)
class Site:
    """A printf or assert call of a kernel: its records' header is `header` (the index in
    the kernel's sites + 1, | ASSERT_FLAG for asserts)."""
    id: int
    where: str                      # file:line of the call
    pieces: tuple = ()              # printf: bytes and Conv, in order
    args: tuple[Arg, ...] = ()      # printf: one per Conv
    words: int = 0                  # argument words of a record
    assertion: tuple[str, str] | None = None   # assert: (condition, function)

    @property
    def header(self) -> int:
        return (self.id + 1) | (ASSERT_FLAG if self.assertion is not None else 0)

    @property
    def record_words(self) -> int:
        return 3 if self.assertion is not None else 1 + self.words


def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _int_value(conv: Conv, word: int) -> int:
    bits = {"hh": 8, "h": 16}.get(conv.length, 32)
    v = word & ((1 << bits) - 1)
    if conv.letter in "di" and v >> (bits - 1):
        v -= 1 << bits
    return v


def _int(conv: Conv, word: int) -> bytes:
    """C's printf of an int conversion (Python's % differs: %#x of 0, %#o's prefix, the 0
    flag beside a precision)."""
    flags, width, prec, _, _ = _SPEC.fullmatch(conv.text).groups()
    v = _int_value(conv, word)
    digits = {"o": "%o", "x": "%x", "X": "%X"}.get(conv.letter, "%d") % abs(v)
    if prec is not None:
        digits = "" if int(prec or 0) == 0 and v == 0 else digits.zfill(int(prec or 0))
    prefix = "-" if v < 0 else "+" if b"+" in flags and conv.letter in "di" else \
        " " if b" " in flags and conv.letter in "di" else ""
    if b"#" in flags and conv.letter in "xX" and v != 0:
        prefix += "0" + conv.letter
    if b"#" in flags and conv.letter == "o" and not digits.startswith("0"):
        digits = "0" + digits
    width = int(width or 0)
    if b"-" in flags:
        text = (prefix + digits).ljust(width)
    elif b"0" in flags and prec is None:
        text = prefix + digits.rjust(width - len(prefix), "0")
    else:
        text = (prefix + digits).rjust(width)
    return text.encode()


def _double(conv: Conv, value: float) -> bytes:
    """C's printf of a double (glibc's text for NaN and infinities)."""
    spec = conv.text
    if math.isfinite(value):
        return spec % value
    # infinities and NaNs: C pads them with spaces even under the 0 flag, and a NaN with
    # its sign bit set prints as -nan
    m = _SPEC.fullmatch(spec)
    flags, width = m.group(1), int(m.group(2) or 0)
    sign = b"-" if math.copysign(1.0, value) < 0 else (
        b"+" if b"+" in flags else b" " if b" " in flags else b"")
    body = b"nan" if math.isnan(value) else b"inf"
    body = sign + (body.upper() if conv.letter in "FEG" else body)
    return body.ljust(width) if b"-" in flags else body.rjust(width)


def format_record(site: Site, words: list[int]) -> bytes:
    """The text one printf record prints."""
    out = []
    convs = iter(site.args)
    for piece in site.pieces:
        if isinstance(piece, bytes):
            out.append(piece)
            continue
        arg = next(convs)
        value = arg.const if arg.word is None else words[arg.word]
        if piece.letter == "s":
            out.append(piece.text % value)
        elif piece.kind == "double":
            out.append(_double(piece, value if arg.word is None else _f32(value)))
        elif piece.letter == "c":
            out.append(piece.text.replace(piece.length.encode(), b"") % (int(value) & 0xFF))
        else:
            out.append(_int(piece, int(value)))
    return b"".join(out)


@dataclass
class Buffer:
    """The printf buffer of one launch: `words` words at the top of global memory, the
    first a counter of the record words appended (advanced atomically by the kernel)."""
    first: int                      # its first word (the counter)
    words: int
    sites: list[Site] = field(default_factory=list)
    room: int = 0                   # the most words the launch's buffer could have

    @property
    def capacity(self) -> int:
        return self.words - 1

    def symbols(self) -> dict[str, int]:
        """The link-time values of the kernel's printf code (cuda.devcalls)."""
        return {"printf:counter": 4 * self.first, "printf:data": 4 * (self.first + 1),
                "printf:capacity": self.capacity}

    def read(self, memory: list[int], kernel: str
             ) -> tuple[str, tuple | None, PrintfOverflow | None]:
        """(the text printed, the first failed assert's (site, ids word), the error of a
        full or overwritten buffer) from the final memory."""
        used = memory[self.first]
        data = memory[self.first + 1:self.first + self.words]
        out, pos, failed = [], 0, None
        while pos < min(used, self.capacity):
            index = (data[pos] & ~ASSERT_FLAG) - 1
            site = self.sites[index] if 0 <= index < len(self.sites) else None
            if site is None or pos + site.record_words > self.capacity:
                break          # the words of a record that did not fit (left zero)
            if site.assertion is not None:
                failed = failed or (site, data[pos + 1])
            else:
                out.append(format_record(site, data[pos + 1:pos + site.record_words]))
            pos += site.record_words
        text = b"".join(out).decode("utf-8", "replace")
        return text, failed, self._problem(used, pos, kernel, text)

    def _problem(self, used: int, pos: int, kernel: str, text: str):
        """The buffer's error: overwritten (its records end where the counter cannot: the
        records fill it up to the counter, or up to less than a record from its end when
        it is full), full, or None."""
        largest = max((s.record_words for s in self.sites), default=1)
        if (used <= self.capacity and pos != used) or \
                (used > self.capacity and pos + largest <= self.capacity):
            return PrintfOverwritten(
                f"{kernel}: the printf buffer was overwritten: its counter holds {used:,}, "
                f"which the launch's printf records (ending at word {pos}) cannot have "
                f"written; a store past the end of an array? (--engine interp checks "
                f"every access against its array)", text)
        if used <= self.capacity:
            return None
        need = f"{kernel}: the printf buffer is full: the launch's printf and assert " \
            f"records need {used} words and the buffer holds {self.capacity} (+1 counter " \
            f"word); "
        if used + 1 <= self.room:
            return PrintfOverflow(need + f"give --printf-words {used + 1} (the API's "
                                  f"printf_words={used + 1})", text)
        from qgpu.isa import limits
        return PrintfOverflow(need + f"the machine's global memory has "
                              f"{limits.GLOBAL_WORDS} words and the launch's arrays and "
                              f"variables leave at most {self.room} for the buffer: print "
                              f"less (fewer threads, calls or values)", text)


def _xyz(index: int, dims: tuple) -> str:
    x, y = dims[0], dims[1] if len(dims) > 1 else 1
    return f"[{index % x},{index // x % y},{index // (x * y)}]"


def assertion_error(site: Site, kernel: str, cta: int, thread: int, printed: str,
                    shape=None) -> KernelAssertion:
    """CUDA's message: file:line: function: block [x,y,z], thread [x,y,z] Assertion ..."""
    cond, func = site.assertion
    grid = shape.grid if shape is not None else (cta + 1,)
    block = shape.block if shape is not None else (thread + 1,)
    return KernelAssertion(f"{site.where}: {func or kernel}: block {_xyz(cta, grid)}, thread "
                           f"{_xyz(thread, block)}: Assertion `{cond}` failed.", printed)


def assert_site(sites: list[Site], trap, program) -> Site | None:
    """The assert whose trap load faulted, or None for another fault: the address is an
    assert's and the faulting instruction is that load (an immediate address)."""
    if trap.kind != "out-of-bounds-global" or not TRAP_BASE <= trap.address < \
            TRAP_BASE + 4 * len(sites) or trap.address % 4:
        return None
    site = sites[(trap.address - TRAP_BASE) // 4]
    if site.assertion is None or not 0 <= trap.block < len(program.blocks):
        return None
    loads = [ins for st in program.blocks[trap.block].stages for ins in st
             if ins.op == "ld.global" and not hasattr(ins.srcs[0], "n")
             and (ins.srcs[0].value + ins.offset) & 0xFFFFFFFF == trap.address]
    return site if loads else None


def printf_reserve(words) -> int:
    """printf_words= / --printf-words: the buffer's words (counter included)."""
    from qgpu.errors import LaunchError
    from qgpu.isa import limits
    if isinstance(words, bool) or not isinstance(words, int) or not \
            2 <= words <= limits.GLOBAL_WORDS:
        raise LaunchError(f"printf_words {words!r}: give the printf buffer's size in words, "
                          f"2..{limits.GLOBAL_WORDS} (one counter word, then the records)")
    return int(words)


def device_fault(fault, buffer: Buffer | None, program, kernel: str, shape):
    """A launch's fault as the user sees it: a failed assert's KernelAssertion (its trap
    load faulted: the TRAP record names it) with what was printed before it (the memory
    at the fault, when the engine kept it), any other fault as it is."""
    site = assert_site(buffer.sites, fault.trap, program) if buffer is not None else None
    if site is None:
        return fault
    memory = getattr(fault, "memory", None)
    printed = buffer.read(memory, kernel)[0] if memory is not None else ""
    from qgpu.isa import limits
    trap = fault.trap
    per_cta = limits.warps_per_cta(shape.threads)
    thread = (trap.warp - trap.cta * per_cta) * limits.LANES + trap.lane
    return assertion_error(site, kernel, trap.cta, thread, printed, shape)


def finish_buffer(buffer: Buffer | None, memory: list[int], kernel: str, shape,
                  copy_back) -> str:
    """After a launch: the text printed; the arrays copied back (`copy_back`), then a
    failed assert (a machine without the fault detector ran past its trap) or a full
    buffer is an error."""
    if buffer is None:
        copy_back()
        return ""
    text, failed, problem = buffer.read(memory, kernel)
    copy_back()
    if isinstance(problem, PrintfOverwritten):
        raise problem           # before an assert record that may be one of its words
    if failed is not None:
        site, ids = failed
        raise assertion_error(site, kernel, ids >> 16, ids & 0xFFFF, text, shape)
    if problem is not None:
        raise problem
    return text


def trap_address(site_id: int) -> int:
    """The out-of-bounds byte address an assert's failing lane loads (cuda.devcalls)."""
    return TRAP_BASE + 4 * site_id
