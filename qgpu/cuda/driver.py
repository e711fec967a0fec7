"""cuda.driver: CUDA source to PTX and to clang's AST with clang-19 (the host's NVRTC role).

It owns the clang command lines (docs/cuda.md explains each flag), the CUDA headers qgpu
ships (qgpu/cuda/include: qgpu_cuda.h, included by itself, cuda_runtime.h,
cooperative_groups.h, ...; a whole .cu file's host code is parsed against the system's
C/C++ headers, cuda.hostheaders), the launch spelling `<< <grid, block>> >`, finding clang,
where a source is compiled (in place when it is a file on disk, so its own includes
resolve; a string is written to a temporary folder, its name's folder searched for
includes), and turning clang's diagnostics into a CompileError that names the user's
file:line. Sources are bytes as clang reads them (any encoding); file names are the OS's.
Results are cached per source.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from qgpu.cuda import hostheaders
from qgpu.errors import CompileError

HEADER_NAME = "qgpu_cuda.h"

# --cuda-device-only: host code is parsed (it must be valid C++ against the shipped
# headers) but never compiled. +ptx70: the *_sync builtins without a CUDA installation; no
# runtime unrolling and no vectorised loads/stores (each costs blocks or needs 64/128-bit
# accesses); line tables only, so errors can name source lines (they do not change the
# generated code). The system's C/C++ headers come from cuda.hostheaders.include_flags
# (clang's own search list for the 64-bit host, given explicitly: -m32 would look for
# 32-bit multilib headers).
_COMMON = [
    "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_75", "-nocudainc", "-nocudalib",
    "--cuda-path=/nonexistent", "--cuda-feature=+ptx70",
    "-Wno-unknown-cuda-version", "-fno-crash-diagnostics",
]
# -m32: 32-bit pointers (the machine's addresses; no 64-bit address arithmetic). long and
# size_t would be 32-bit too, so the AST (below, compiled for a 64-bit GPU) refuses
# kernels that compute with them rather than let them narrow silently. -malign-double:
# long long (and double) on 8 bytes, as on a 64-bit GPU (-m32 takes i386's 4), so a long
# long access stays one 8-byte access (ld.u64) whose alignment the interpreter checks.
CLANG_FLAGS = [*_COMMON, "-m32", "-malign-double", "-O2", "-mllvm", "-unroll-runtime=false",
               "-mllvm", "-disable-nvptx-load-store-vectorizer", "-gline-tables-only"]
AST_FLAGS = [*_COMMON, "-fsyntax-only", "-Xclang", "-ast-dump=json"]


def include_dir() -> Path:
    """The shipped headers (package data of qgpu.cuda)."""
    return Path(str(resources.files("qgpu.cuda") / "include"))


def header_path() -> Path:
    """The bundled header every kernel sees."""
    return include_dir() / HEADER_NAME


def find_clang() -> str:
    """clang-19, from $QGPU_CLANG, PATH or /usr/bin. A QGPU_CLANG that names no program is
    an error (not silently another clang)."""
    named = os.environ.get("QGPU_CLANG")
    if named and not (Path(named).is_file() and os.access(named, os.X_OK)):
        raise CompileError(f"QGPU_CLANG={named}: no such program (unset it to use clang-19 "
                           "from PATH)")
    for cand in (os.environ.get("QGPU_CLANG"), shutil.which("clang-19"), "/usr/bin/clang-19",
                 "/usr/lib/llvm-19/bin/clang"):
        if cand and Path(cand).exists():
            return cand
    raise CompileError("clang-19 is not installed (needed to compile CUDA); install it, e.g. "
                       "'sudo apt-get install clang-19', or set QGPU_CLANG")


def _diagnostic(stderr: str, code: int) -> str:
    """clang's first error (with a count of the others); clang's whole message when it
    crashed or printed no error line."""
    lines = stderr.splitlines()
    errors = [ln for ln in lines if re.search(r"(^|: )(fatal )?error:", ln)
              and "frontend command failed" not in ln]
    if "unsupported characters" in stderr:    # a crash in PTX emission (clang-19)
        return (f"clang crashed: {errors[0] if errors else 'no message'} (a kernel, "
                "function or variable name with non-ASCII characters: PTX names are ASCII; "
                "rename it)")
    if not errors:
        text = " | ".join(ln.strip() for ln in lines if ln.strip())[:600]
        return f"clang failed (exit code {code}): {text or 'no message'}"
    first = errors[0]
    if "file not found" in first:
        first += f" ({hostheaders.missing_header_hint(find_clang(), shipped_headers())})"
    extra = len(errors) - 1
    return first + (f" (and {extra} more error{'s' if extra > 1 else ''})" if extra else "")


def shipped_headers() -> list[str]:
    """The CUDA headers qgpu ships, as a file #includes them (cooperative_groups/reduce.h)."""
    root = include_dir()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.h")
                  if p.is_file() and not p.name.startswith(("qgpu", "__")))


# `kernel<< <grid, block>> >(...)`: a formatter's spelling of a launch (clang-format of old
# versions split the chevrons); nvcc accepts it, clang's lexer needs `<<<` and `>>>`. Only
# within one line, and only a `<< <` ... `>> >` pair with no `;` between them (`>> >` alone
# closes nested templates).
_SPLIT_LAUNCH = re.compile(rb"<<[ \t]+<([^;\n]*?)>>[ \t]+>")


def join_launch_chevrons(source: bytes) -> bytes:
    return _SPLIT_LAUNCH.sub(rb"<<<\1>>>", source)


def _as_bytes(source: str | bytes) -> bytes:
    return source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source


def _run(flags: list[str], source: bytes, filename: str, includes: tuple[str, ...],
         out_name: str | None) -> tuple[bytes, str]:
    """Run clang on `source`: the file `filename` itself when it holds exactly these bytes
    (compiled in place), else a copy in a temporary folder with filename's folder searched
    for quoted includes. Returns (output file's bytes or stdout, the display name)."""
    clang = find_clang()
    source = join_launch_chevrons(source)
    path = Path(os.fsdecode(filename))
    shown = os.fsdecode(filename)
    in_place = False
    try:
        in_place = path.is_file() and path.read_bytes() == source
    except OSError:
        pass
    with tempfile.TemporaryDirectory(prefix="qgpu-") as tmp:
        if in_place:
            src = path.resolve()
        else:
            src = Path(tmp) / ("src" + (path.suffix if path.suffix == ".cu" else ".cu"))
            src.write_bytes(source)
        cmd = [clang, *flags]
        if not in_place and path.parent.is_dir():
            cmd += ["-iquote", str(path.parent)]
        for d in includes:
            cmd += ["-I", os.fsdecode(d)]
        cmd += ["-isystem", str(include_dir()), *hostheaders.include_flags(clang),
                "-include", str(header_path()), str(src)]
        out = Path(tmp) / (out_name or "out")
        if out_name:
            cmd += ["-S", "-o", str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, timeout=120, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise CompileError(f"{shown}: clang took more than 120 s") from None
        stderr = proc.stderr.decode("utf-8", "replace")
        stderr = stderr.replace(str(src), shown)
        if proc.returncode != 0:
            err = CompileError(_diagnostic(stderr, proc.returncode))
            err.diagnostics = stderr
            raise err
        data = out.read_bytes() if out_name else proc.stdout
        data = data.replace(os.fsencode(str(src)), os.fsencode(shown))
        return data, shown


@functools.lru_cache(maxsize=64)
def compile_to_ptx(source: str | bytes, filename: str = "kernel.cu",
                   includes: tuple[str, ...] = ()) -> str:
    """PTX text for CUDA source; CompileError with file:line: message when clang fails."""
    data, _ = _run(CLANG_FLAGS, _as_bytes(source), filename, includes, "out.ptx")
    return data.decode("utf-8", "replace")


def kernel_ast(source: str | bytes, filename: str = "kernel.cu",
               includes: tuple[str, ...] = ()) -> dict:
    """clang's AST of the source as JSON (for a 64-bit GPU: the types a GPU gives)."""
    data, _ = _run(AST_FLAGS, _as_bytes(source), filename, includes, None)
    dirs = hostheaders.system_include_dirs(find_clang())
    return json.loads(hostheaders.trim_ast(data, dirs).decode("utf-8", "replace"))


def include_folders(include_dirs) -> tuple[str, ...]:
    """include_dirs as folders: one str or path is one folder (not its letters), a
    relative one is taken from the current directory, as a compiler's -I is."""
    if include_dirs is None:
        return ()
    if isinstance(include_dirs, str | bytes | os.PathLike):
        include_dirs = [include_dirs]
    try:
        folders = [os.fsdecode(d) for d in include_dirs]
    except TypeError:
        raise CompileError("include_dirs must be a folder or a list of folders (str or "
                           f"path), not {type(include_dirs).__name__}") from None
    return tuple(os.path.abspath(d) for d in folders)
