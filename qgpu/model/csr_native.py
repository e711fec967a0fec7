"""model.csr_native: a C product for the CSR blocks of `SparseRows` over many positions,
for instrumented runs of the numpy engine (analysis.margins) that feed tens of thousands
of positions: np.add.reduceat over a [T, nnz] gather costs ~10x more time and a
[T, nnz] temporary. Each output is the sequential sum of its row's terms in input
order, as the native kernel (fast_kernel.c) sums its sparse products; where the sums
are exact (what the circuit relies on) every order gives the same float.

`sequential(rows)` returns a matmat(x) for a SparseRows, or None (no compiler, a dense
block: those keep numpy's BLAS product).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile

import numpy as np

from qgpu.model.fast_native import FLAGS, _cache_dir, _compiler
from qgpu.model.sparse import SparseRows

SOURCE = r"""
#include <stdint.h>
void csr_matmat(const float *data, const int64_t *col, const int64_t *ptr, int64_t n_rows,
                const float *x, int64_t n_t, int64_t n_in, float *out) {
    for (int64_t t = 0; t < n_t; t++) {
        const float *xt = x + t * n_in;
        float *ot = out + t * n_rows;
        for (int64_t r = 0; r < n_rows; r++) {
            float acc = 0.0f;
            for (int64_t k = ptr[r]; k < ptr[r + 1]; k++) acc += data[k] * xt[col[k]];
            ot[r] = acc;
        }
    }
}
"""

_lib: ctypes.CDLL | None = None
_tried = False


def _load() -> ctypes.CDLL | None:
    global _lib, _tried
    if _tried:
        return _lib
    _tried = True
    cc = _compiler()
    if cc is None:
        return None
    key = hashlib.sha256((SOURCE + repr((cc, FLAGS))).encode()).hexdigest()[:16]
    target = _cache_dir() / f"csr_kernel_{key}.so"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "csr.c")
            with open(src, "w") as f:
                f.write(SOURCE)
            fd, so = tempfile.mkstemp(suffix=".so", dir=target.parent)
            os.close(fd)
            if subprocess.run([cc, *FLAGS, src, "-o", so], capture_output=True).returncode:
                os.unlink(so)
                return None
            os.replace(so, target)
    lib = ctypes.CDLL(str(target))
    lib.csr_matmat.restype = None
    lib.csr_matmat.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_void_p,
                                                       ctypes.c_int64, ctypes.c_int64,
                                                       ctypes.c_void_p]
    _lib = lib
    return lib


def sequential(rows: SparseRows):
    """A matmat(x [T, in]) -> [T, len(rows.rows)] for a CSR SparseRows, or None."""
    lib = _load()
    if lib is None or rows.dense:
        return None
    data = np.ascontiguousarray(rows.data, np.float32)
    col = np.ascontiguousarray(rows.gather, np.int64)
    ptr = np.ascontiguousarray(np.r_[rows.starts, data.size], np.int64)
    n_rows = ptr.size - 1

    def matmat(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, np.float32)
        out = np.empty((x.shape[0], n_rows), np.float32)
        lib.csr_matmat(data.ctypes.data, col.ctypes.data, ptr.ctypes.data, n_rows,
                       x.ctypes.data, x.shape[0], x.shape[1], out.ctypes.data)
        return out

    return matmat
