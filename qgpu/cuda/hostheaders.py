"""cuda.hostheaders: the system's C/C++ headers for a whole file's host code, and the AST
trimmed of them.

Host code is parsed (never compiled) against the headers clang-19 itself finds for the
64-bit host (libstdc++ and glibc on Debian, which clang-19's package depends on): the
search list of `clang -E -v`, passed explicitly so that the 32-bit device compile (-m32,
whose i386 host would look for multilib headers that are rarely installed) sees the same
files. qgpu/cuda/host_fallback is searched last: an empty gnu/stubs-32.h (glibc's 32-bit
stub list, absent without the i386 multilib) and a parse-only omp.h for files that
include OpenMP's header when no OpenMP is installed.

clang's JSON AST of a file that includes <iostream> is ~120 MB, nearly all of it the C++
library; `trim_ast` keeps the top-level declarations of the user's files and qgpu's
headers (and every typedef, without its body, which parameter types are desugared with), and
replaces each dropped run by one node that carries the location state clang's JSON
writes as deltas (a file or line is written only when it changes).
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from pathlib import Path

from qgpu.errors import CompileError

_FALLBACK = Path(__file__).resolve().parent / "host_fallback"


def fallback_dir() -> Path:
    return _FALLBACK


@functools.lru_cache(maxsize=4)
def system_include_dirs(clang: str) -> tuple[str, ...]:
    """clang's own <...> search list for CUDA on this host, in order (cuda_wrappers, the
    C++ library, clang's builtin headers, the C library)."""
    with tempfile.TemporaryDirectory(prefix="qgpu-") as tmp:
        empty = Path(tmp) / "empty.cu"
        empty.write_bytes(b"")
        try:
            proc = subprocess.run(
                [clang, "-x", "cuda", "--cuda-device-only", "-nocudainc", "-nocudalib",
                 "--cuda-path=/nonexistent", "-Wno-unknown-cuda-version", "-E", "-v",
                 "-o", os.devnull, str(empty)], capture_output=True, timeout=60, cwd=tmp)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CompileError(f"{clang} could not list its include folders: {exc}") from None
    lines = proc.stderr.decode("utf-8", "replace").splitlines()
    try:
        start = lines.index("#include <...> search starts here:") + 1
        end = lines.index("End of search list.", start)
    except ValueError:
        raise CompileError(f"{clang} printed no include search list (clang -E -v)") from None
    return tuple(ln.strip() for ln in lines[start:end] if ln.strip())


def c_math_header(dirs: tuple[str, ...]) -> str | None:
    """The C library's math.h (not the C++ library's wrapper, which pulls in <cmath>:
    ~130 MB of AST), for the math functions nvcc's headers declare without an include."""
    for d in dirs:
        if "c++" not in d and "cuda_wrappers" not in d and (Path(d) / "math.h").is_file():
            return str(Path(d) / "math.h")
    return None


def include_flags(clang: str) -> list[str]:
    dirs = system_include_dirs(clang)
    flags = ["-nostdlibinc"]
    for d in dirs:
        flags += ["-isystem", d]
    flags += ["-idirafter", str(_FALLBACK)]
    math = c_math_header(dirs)
    if math and '"' not in math:
        flags.append(f'-D__QGPU_C_MATH_H="{math}"')
    return flags


def missing_header_hint(clang: str, shipped: list[str]) -> str:
    """What to do about a header clang did not find (shipped: the CUDA headers qgpu
    ships, from cuda.driver, which imports this module)."""
    dirs = system_include_dirs(clang)
    cxx = [d for d in dirs if "c++" in d and "cuda_wrappers" not in d]
    if not cxx:
        return ("clang-19 found no C++ standard library: install libstdc++-12-dev "
                "(Debian: 'apt-get install libstdc++-12-dev')")
    return ("qgpu parses host code against the system's C/C++ headers and ships the CUDA "
            f"ones: {', '.join(shipped)}; a helper header of a samples repository goes "
            "beside the source or on an -I path")


_TOP = b"\n    {\n"                      # a top-level declaration (the TU's inner list)
_KIND = re.compile(rb'"kind": "([A-Za-z]+)"')
_KEEP_KINDS = {b"TypedefDecl", b"TypeAliasDecl"}
_TYPEDEF_AT = (b'"kind": "TypedefDecl"', b'"kind": "TypeAliasDecl"')
_NAME_TYPE = re.compile(rb'"name": "([^"]*)",\s*"type": (\{[^{}]*\})')


def _typedefs(text: bytes, lo: int, hi: int) -> list[bytes]:
    """Every typedef declared in text[lo:hi] (in extern "C" blocks, namespaces, classes),
    as a node without location: parameter types are desugared through them (clock_t *,
    uint8_t *), as they were through the typedefs of the whole AST."""
    out = []
    for marker in _TYPEDEF_AT:
        at = text.find(marker, lo, hi)
        while at >= 0:
            # a declaration node (its "loc" next), not a TypedefType's reference to one
            if text[at + len(marker):at + len(marker) + 64].lstrip(b", \n").startswith(b'"loc"'):
                name_at = text.find(b'"name": "', at, min(hi, at + 3000))
                m = _NAME_TYPE.match(text, name_at) if name_at >= 0 else None
                if m:
                    out.append(b'{"kind": "%s", "name": "%s", "type": %s}'
                               % (marker[9:-1], m.group(1), m.group(2)))
            at = text.find(marker, at + 1, hi)
    return out


def _last_file(text: bytes, lo: int, hi: int) -> bytes | None:
    """The last location file written in text[lo:hi] (an includedFrom's file is not one).
    Positions, not slices: the text is up to a few hundred MB."""
    while True:
        at = text.rfind(b'"file": "', lo, hi)
        if at < 0:
            return None
        if not text[max(lo, at - 64):at].rstrip().endswith(b'"includedFrom": {'):
            return text[at + 9:text.index(b'"', at + 9)]
        hi = at


def _last_line(text: bytes, lo: int, hi: int) -> bytes | None:
    at = text.rfind(b'"line": ', lo, hi)
    if at < 0:
        return None
    stop = at + 8
    while text[stop:stop + 1].isdigit():
        stop += 1
    return text[at + 8:stop]


def _own_file(text: bytes, lo: int, hi: int) -> bytes | None:
    """The file of a declaration's own location (its "loc", before its "range")."""
    loc = text.find(b'"loc": {', lo, min(hi, lo + 400))
    if loc < 0:
        return None
    rng = text.find(b'"range": {', loc, hi)
    return _last_file(text, loc, rng if rng > 0 else min(hi, loc + 2000))


def trim_ast(text: bytes, system_dirs: tuple[str, ...]) -> bytes:
    """clang's JSON AST without the top-level declarations of system headers."""
    starts = []
    at = text.find(_TOP)
    while at >= 0:
        starts.append(at + 1)
        at = text.find(_TOP, at + 1)
    tail = text.rfind(b"\n  ]")
    if not starts or tail < starts[-1]:
        return text
    prefixes = tuple(os.fsencode(d).rstrip(b"/") + b"/" for d in system_dirs)
    kept: list[bytes] = []
    cur_file, cur_line = b"", b"0"
    dropped_since = False
    for lo, hi in zip(starts, starts[1:] + [tail + 1], strict=True):
        while text[hi - 1:hi] in b" \n,":       # the chunk's own closing brace ends it
            hi -= 1
        kind = _KIND.search(text, lo, min(hi, lo + 200))
        own = _own_file(text, lo, hi) or cur_file
        if own.startswith(prefixes) and not (kind and kind.group(1) in _KEEP_KINDS):
            dropped_since = True
            kept.extend(_typedefs(text, lo, hi))
        else:
            if dropped_since:
                kept.append(b'{"kind": "QgpuSkipped", "loc": {"file": "%s", "line": %s}}'
                            % (cur_file, cur_line))
                dropped_since = False
            kept.append(text[lo:hi])
        cur_file = _last_file(text, lo, hi) or cur_file
        cur_line = _last_line(text, lo, hi) or cur_line
    return text[:starts[0]] + b",\n".join(kept) + text[tail:]
