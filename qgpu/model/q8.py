"""model.q8: `Q8Matrix`, a bfloat16 matrix quantized to 8 bits in blocks of 32 columns
(int8 values, one float32 scale per block: GGUF's Q8_0 layout) for `qgpu chat
--text-weights q8`. Half the bf16 bytes to read per token; NOT the base's bits (the
greedy text may differ from the bf16 base's). Products in q8_matvec.c (numpy without a
C compiler)."""

from __future__ import annotations

import ctypes

import numpy as np

from qgpu.model.bf16 import Bf16Matrix, Transposed, product_operands, threads, widen

BLOCK = 32
SOURCE_NAME = "q8_matvec.c"
FLAGS = ["-O3", "-fPIC", "-shared", "-pthread"]
QUANTIZE_ROWS = 4096
_LIB: list = []


def load_lib():
    """The native product (ctypes), or None (no compiler, a failed build, QGPU_NATIVE=0)."""
    if not _LIB:
        import os
        from pathlib import Path

        from qgpu.errors import QgpuError
        from qgpu.model.fast_native import _compiler, build_library

        lib, cc = None, _compiler()
        if cc is not None and os.environ.get("QGPU_NATIVE") != "0":
            try:
                path = build_library(cc, Path(__file__).with_name(SOURCE_NAME), "q8_matvec",
                                     FLAGS)
                lib = ctypes.CDLL(str(path))
                p, i = ctypes.c_void_p, ctypes.c_int64
                lib.qgpu_q8_matmul.argtypes = [p, p, i, i, p, i, p, ctypes.c_int]
                lib.qgpu_q8_matmul.restype = None
            except (OSError, QgpuError):
                lib = None
        _LIB.append(lib)
    return _LIB[0]


class Q8Matrix:
    """[rows, cols] as int8 blocks and float32 scales (the columns zero-padded to whole
    blocks: a merged model's hidden size need not be a multiple of 32); `x @ m.T`."""

    __array_ufunc__ = None

    def __init__(self, source: Bf16Matrix):
        rows, cols = source.shape
        self.shape, self.ndim = (rows, cols), 2
        self.padded = -(-cols // BLOCK) * BLOCK
        self.values = np.empty((rows, self.padded), np.int8)
        self.scales = np.empty((rows, self.padded // BLOCK), np.float32)
        for a in range(0, rows, QUANTIZE_ROWS):   # widened a slice at a time
            w = widen(source.bits[a:a + QUANTIZE_ROWS])
            w = np.pad(w, ((0, 0), (0, self.padded - cols))).reshape(-1, self.padded // BLOCK,
                                                                     BLOCK)
            scale = np.abs(w).max(axis=2) / 127.0
            safe = np.where(scale > 0, scale, 1.0)[..., None]
            self.values[a:a + QUANTIZE_ROWS] = np.rint(w / safe).astype(np.int8).reshape(
                -1, self.padded)
            self.scales[a:a + QUANTIZE_ROWS] = scale

    @property
    def T(self) -> Transposed:  # noqa: N802 - numpy's name
        return Transposed(self)

    @property
    def nbytes(self) -> int:
        return self.values.nbytes + self.scales.nbytes

    def __getitem__(self, rows) -> np.ndarray:
        q = self.values[rows].astype(np.float32)
        s = np.repeat(self.scales[rows], BLOCK, axis=-1)
        return (q * s)[..., :self.shape[1]]

    def times(self, x: np.ndarray) -> np.ndarray:
        x, flat, out = product_operands(x, self.shape)
        rows, cols = self.shape
        lib = load_lib()
        if lib is not None:
            if self.padded != cols:
                flat = np.ascontiguousarray(np.pad(flat, ((0, 0), (0, self.padded - cols))))
            lib.qgpu_q8_matmul(self.values.ctypes.data, self.scales.ctypes.data, rows,
                               self.padded,
                               flat.ctypes.data, flat.shape[0], out.ctypes.data, threads())
        else:
            for a in range(0, rows, QUANTIZE_ROWS):
                out[:, a:a + QUANTIZE_ROWS] = flat @ self[a:a + QUANTIZE_ROWS].T
        return out.reshape(*x.shape[:-1], rows)
