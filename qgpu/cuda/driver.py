"""cuda.driver: CUDA source to PTX with clang-19 (the host's NVRTC role).

It owns the clang command line (docs/cuda.md explains each flag), the bundled header that
clang includes by itself, finding clang, and turning clang's diagnostics into a
CompileError that names the user's file:line. Results are cached per source text.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from qgpu.errors import CompileError

HEADER_NAME = "qgpu_cuda.h"

# -m32: 32-bit pointers (no 64-bit address arithmetic); +ptx70: the *_sync builtins without
# a CUDA installation; no runtime unrolling and no vectorised loads/stores (each costs
# blocks or needs 64/128-bit accesses); line tables only, so errors can name source lines
# (they do not change the generated code).
CLANG_FLAGS = [
    "-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_75", "-nocudainc", "-nocudalib",
    "--cuda-path=/nonexistent", "--cuda-feature=+ptx70", "-m32", "-O2",
    "-mllvm", "-unroll-runtime=false", "-mllvm", "-disable-nvptx-load-store-vectorizer",
    "-gline-tables-only", "-Wno-unknown-cuda-version",
]


def header_path() -> Path:
    """The bundled header (package data of qgpu.cuda)."""
    return Path(str(resources.files("qgpu.cuda") / "include" / HEADER_NAME))


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


def _diagnostic(stderr: str, tmp_path: str, filename: str) -> str:
    """clang's first error, with the temporary path replaced by the user's file name."""
    lines = [ln.replace(tmp_path, filename) for ln in stderr.splitlines()]
    errors = [ln for ln in lines if ": error:" in ln or ": fatal error:" in ln]
    if not errors:
        return (lines[0] if lines else "clang failed without a message")
    first = errors[0]
    extra = len(errors) - 1
    return first + (f" (and {extra} more error{'s' if extra > 1 else ''})" if extra else "")


@functools.lru_cache(maxsize=64)
def compile_to_ptx(source: str, filename: str = "kernel.cu") -> str:
    """PTX text for CUDA source; CompileError with file:line: message when clang fails."""
    clang = find_clang()
    name = Path(filename).name or "kernel.cu"
    if not name.endswith(".cu"):
        name += ".cu"
    with tempfile.TemporaryDirectory(prefix="qgpu-") as tmp:
        src = Path(tmp) / name
        out = Path(tmp) / "out.ptx"
        src.write_text(source)
        cmd = [clang, *CLANG_FLAGS, "-include", str(header_path()), "-S", str(src),
               "-o", str(out)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise CompileError(f"{filename}: clang took more than 120 s") from None
        if proc.returncode != 0:
            err = CompileError(_diagnostic(proc.stderr, str(src), filename))
            err.diagnostics = proc.stderr.replace(str(src), filename)
            raise err
        # the line table names the temporary file: make it name the user's
        return out.read_text().replace(str(src), filename)
