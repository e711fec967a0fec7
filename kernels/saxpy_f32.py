"""saxpy_f32: y = a * x + y in float32, each element one fma (rounded once): the oracle
rounds the exact value a * x + y (fractions) to the nearest float32, ties to even."""
import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "qgpu_suite_f32_oracle", Path(__file__).with_name("_f32_oracle.py"))
_f32 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_f32)

KERNEL = "saxpy_f32"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    y = (rng.standard_normal(n) * 100).astype(np.float32)
    a = np.float32(rng.standard_normal() * 3)
    return {"grid": grid, "block": block, "args": {"n": n, "a": float(a), "x": x, "y": y}}


LAUNCHES = [_launch(1, 16, 16, 300), _launch(4, 4, 13, 301), _launch(1, 4, 4, 302)]


def oracle(args, grid, block):
    a, x, y, n = np.float32(args["a"]), args["x"], args["y"].copy(), args["n"]
    y[:n] = [_f32.fma32(a, xv, yv) for xv, yv in zip(x[:n], y[:n], strict=True)]
    return {"x": x, "y": y}
