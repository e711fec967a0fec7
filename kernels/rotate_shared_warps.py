"""rotate_shared_warps: cross-warp exchange through shared memory with three barriers."""
import numpy as np

KERNEL = "rotate_shared_warps"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-1000, 1000, size, dtype=np.int32),
        "out": np.zeros(size, np.int32)}}


LAUNCHES = [_launch(1, 16, 340), _launch(1, 13, 341), _launch(2, 8, 342), _launch(4, 3, 343)]


def oracle(args, grid, block):
    out = []
    for c in range(grid):
        row = [int(v) for v in args["in"][c * block:(c + 1) * block]]
        second = [row[(t + 5) % block] * 2 + t for t in range(block)]
        out += second[::-1]
    return {"in": args["in"], "out": np.array(out, np.int32)}
