"""isqrt_loop: floor(sqrt(x)) for 32-bit unsigned x by bisection (16 iterations)."""
import math

import numpy as np

from qgpu.suite import u32_array

KERNEL = "isqrt_loop"

LAUNCHES = [
    {"grid": 1, "block": 8, "args": {
        "in": u32_array([0, 1, 2, 15, 16, 17, 4294967295, 4294836225]),
        "out": np.zeros(8, dtype=np.uint32)}},
    {"grid": 2, "block": 5, "args": {
        "in": np.random.default_rng(240).integers(0, 2**32, 10, dtype=np.uint32),
        "out": np.zeros(10, dtype=np.uint32)}},
]


def oracle(args, grid, block):
    return {"in": args["in"], "out": u32_array([math.isqrt(int(x)) for x in args["in"]])}
