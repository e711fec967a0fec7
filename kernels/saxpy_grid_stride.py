"""saxpy_grid_stride: y = a x + y with a grid-stride loop, <<<8, 128>>> over 2,048 floats
(interpreter only until the model machine holds 128-thread blocks); each element one fma
(kernels/_f32_oracle.py)."""
import importlib.util
from pathlib import Path

import numpy as np

_spec = importlib.util.spec_from_file_location(
    "qgpu_suite_f32_oracle", Path(__file__).with_name("_f32_oracle.py"))
_f32 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_f32)

KERNEL = "saxpy"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "n": n, "a": np.float32(2.5), "x": rng.standard_normal(n).astype(np.float32),
        "y": rng.standard_normal(n).astype(np.float32)}}


LAUNCHES = [_launch(8, 128, 2048, 330), _launch(8, 128, 2000, 331)]


def oracle(args, grid, block):
    n = args["n"]
    y = args["y"].copy()
    y[:n] = _f32.fma32_array(np.float32(args["a"]), args["x"][:n], y[:n])
    return {"x": args["x"], "y": y}
