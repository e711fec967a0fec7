"""matmul_tiled_16: C = A B for 32x32 floats in 16x16 shared tiles, grid (2, 2) x block
(16, 16) (interpreter only until the model machine holds 256-thread blocks). The oracle
accumulates in the kernel's order, each step one fma (clang contracts sum += a * b, as
nvcc does: kernels/_f32_oracle.py)."""
import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "qgpu_suite_f32_oracle", Path(__file__).with_name("_f32_oracle.py"))
_f32 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_f32)

KERNEL = "matmul_tiled"
N = 32


def _launch(seed):
    rng = np.random.default_rng(seed)
    return {"grid": (2, 2), "block": (16, 16), "args": {
        "A": rng.standard_normal(N * N).astype(np.float32),
        "B": rng.standard_normal(N * N).astype(np.float32),
        "C": np.zeros(N * N, np.float32), "n": N}}


LAUNCHES = [_launch(320)]


def oracle(args, grid, block):
    a = args["A"].reshape(N, N)
    b = args["B"].reshape(N, N)
    c = np.zeros((N, N), np.float32)
    for k in range(N):
        c = _f32.fma32_array(np.broadcast_to(a[:, k:k + 1], (N, N)), np.broadcast_to(
            b[k:k + 1, :], (N, N)), c)
    return {"A": args["A"], "B": args["B"], "C": c.reshape(-1)}
