"""model.bf16: bfloat16 matrices kept bfloat16 in memory (a release's weights, usually
memory-mapped from its safetensors file), multiplied by float32 inputs in a small native
kernel (bf16_matvec.c: each weight widened as it is read, float32 sums in one fixed order
whatever the thread count). `Bf16Matrix` is what `x @ W.T` sees in the reference
engine's formulas (`__array_ufunc__ = None` makes numpy hand `@` to it).

Without a C compiler the product widens the matrix block by block in numpy (same values
up to summation order; slower).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

SOURCE = Path(__file__).with_name("bf16_matvec.c")
FLAGS = ["-O3", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared", "-pthread"]
_LIB: list = []


def threads() -> int:
    """Threads for a product: QGPU_THREADS, else the CPUs this process may use (<= 16)."""
    env = os.environ.get("QGPU_THREADS")
    if env and env.isdigit() and int(env) > 0:
        return min(16, int(env))
    return max(1, min(16, len(os.sched_getaffinity(0))))


def _build() -> Path | None:
    from qgpu.errors import QgpuError
    from qgpu.model.fast_native import _compiler, build_library

    cc = _compiler()
    if cc is None or os.environ.get("QGPU_NATIVE") == "0":
        return None
    try:
        return build_library(cc, SOURCE, "bf16_matvec", FLAGS)
    except (OSError, QgpuError):
        return None


def load_lib():
    """The native product (ctypes), or None (no compiler, a failed build, QGPU_NATIVE=0)."""
    if not _LIB:
        path = _build()
        lib = None
        if path is not None:
            lib = ctypes.CDLL(str(path))
            p = ctypes.c_void_p
            lib.qgpu_bf16_matmul.argtypes = [p, ctypes.c_int64, ctypes.c_int64, p,
                                             ctypes.c_int64, p, ctypes.c_int]
            lib.qgpu_bf16_matmul.restype = None
        _LIB.append(lib)
    return _LIB[0]


def widen(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bits -> float32 values (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def narrow_exact(values: np.ndarray) -> np.ndarray | None:
    """float32 values as bfloat16 bits when every value is a bfloat16 number, else None."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    if (bits & 0xFFFF).any():
        return None
    return (bits >> 16).astype(np.uint16)


class Bf16Matrix:
    """A [rows, cols] matrix of bfloat16 bits (uint16, C-contiguous; a memmap is fine).
    `x @ m.T` is x [.., cols] times its transpose, in float32; `m[ids]` its rows widened
    (an embedding lookup)."""

    __array_ufunc__ = None   # numpy defers `x @ m.T` to Transposed.__rmatmul__

    def __init__(self, bits: np.ndarray):
        if bits.dtype != np.uint16 or bits.ndim != 2 or not bits.flags.c_contiguous:
            raise ValueError("Bf16Matrix needs C-contiguous 2-D uint16 bits")
        self.bits = bits
        self.shape = bits.shape
        self.ndim = 2

    @property
    def T(self) -> Transposed:  # noqa: N802 - numpy's name
        return Transposed(self)

    @property
    def nbytes(self) -> int:
        return self.bits.nbytes

    def __getitem__(self, rows) -> np.ndarray:
        return widen(self.bits[rows])

    def times(self, x: np.ndarray) -> np.ndarray:
        """x [..., cols] @ self.T -> [..., rows], float32."""
        x, flat, out = product_operands(x, self.shape)
        rows, cols = self.shape
        lib = load_lib()
        if lib is not None:
            lib.qgpu_bf16_matmul(self.bits.ctypes.data, rows, cols, flat.ctypes.data,
                                 flat.shape[0], out.ctypes.data, threads())
        else:
            step = max(1, (32 << 20) // (4 * cols))
            for a in range(0, rows, step):
                out[:, a:a + step] = flat @ widen(self.bits[a:a + step]).T
        return out.reshape(*x.shape[:-1], rows)


def product_operands(x, shape: tuple[int, int]):
    """(x as float32, its rows as [n, cols], the [n, rows] output) of `x @ m.T` for a
    matrix m of `shape` (the bf16 and q8 matrices' products)."""
    x = np.ascontiguousarray(x, np.float32)
    rows, cols = shape
    if x.shape[-1] != cols:
        raise ValueError(f"matmul: {x.shape} @ ({cols}, {rows})")
    flat = x.reshape(-1, cols)
    return x, flat, np.empty((flat.shape[0], rows), np.float32)


class Transposed:
    """A matrix's transpose for `x @ m.T`: any matrix with `shape` and `times(x)` (the
    bf16 and q8 matrices)."""

    __array_ufunc__ = None

    def __init__(self, matrix):
        self.matrix = matrix
        self.shape = matrix.shape[::-1]

    def __rmatmul__(self, x) -> np.ndarray:
        return self.matrix.times(x)
