"""saxpy_u32_wrap: unsigned alpha * x + y with products far beyond 2^32 (wrap-around)."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "saxpy_u32_wrap"


def _launch(grid, block, alpha, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "alpha": alpha, "x": rng.integers(0, 2**32, size, dtype=np.uint32),
        "y": rng.integers(0, 2**32, size, dtype=np.uint32)}}


LAUNCHES = [_launch(1, 8, 0x9E3779B9, 20), _launch(2, 7, 0xFFFFFFFF, 21),
            _launch(4, 4, 65537, 22)]


def oracle(args, grid, block):
    alpha = args["alpha"]
    y = [alpha * int(x) + int(y) for x, y in zip(args["x"], args["y"], strict=True)]
    return {"x": args["x"], "y": u32_array(y)}
