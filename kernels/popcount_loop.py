"""popcount_loop: the bit count by a data-dependent loop and by __popc."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "popcount_loop"


def _launch(grid, block, values):
    n = len(values)
    return {"grid": grid, "block": block, "args": {
        "in": u32_array(values), "loop_count": np.zeros(n, np.int32),
        "popc": np.zeros(n, np.int32), "parity": np.zeros(n, np.int32)}}


LAUNCHES = [_launch(1, 8, [0, 1, 0xFFFFFFFF, 0x80000000, 0xF0F0F0F0, 7, 0x12345678, 3]),
            _launch(2, 6, list(np.random.default_rng(250).integers(0, 2**32, 12)))]


def oracle(args, grid, block):
    counts = [bin(int(x)).count("1") for x in args["in"]]
    return {"in": args["in"], "loop_count": np.array(counts, np.int32),
            "popc": np.array(counts, np.int32), "parity": np.array(counts, np.int32) & 1}
