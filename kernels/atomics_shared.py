"""atomics_shared: add/sub/min/max/and/or/xor and unsigned max on shared words per CTA."""
from functools import reduce

import numpy as np

from qgpu.suite import i32_array, u32

KERNEL = "atomics_shared"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-2**31, 2**31 - 1, grid * block, dtype=np.int32),
        "out": np.full(8 * grid, 99, np.int32)}}


LAUNCHES = [_launch(1, 16, 450), _launch(2, 8, 451), _launch(4, 4, 452)]


def oracle(args, grid, block):
    out = args["out"].copy()
    for c in range(grid):
        v = [int(x) for x in args["in"][c * block:(c + 1) * block]]
        words = [sum(v), 1000 - sum(v), min(v), max(v), reduce(lambda x, y: x & y, v, -1),
                 reduce(lambda x, y: x | y, v, 0), reduce(lambda x, y: x ^ y, v, 0),
                 max(u32(x) for x in v)]
        for k in range(min(8, block)):
            out[8 * c + k] = i32_array([words[k]])[0]
    return {"in": args["in"], "out": out}
