"""shfl_broadcast: idx shuffles within groups of 4: broadcast, rotation, an index above
the width (taken modulo 4). Blocks are multiples of 4 (all source lanes active)."""
import numpy as np

KERNEL = "shfl_broadcast"


def _launch(grid, block, src, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-1000, 1000, size, dtype=np.int32),
        "src": np.array([src], np.int32), "bcast": np.zeros(size, np.int32),
        "rot": np.zeros(size, np.int32), "wide": np.zeros(size, np.int32)}}


LAUNCHES = [_launch(1, 4, 0, 400), _launch(1, 16, 2, 401), _launch(2, 8, 7, 402)]


def oracle(args, grid, block):
    g = args["in"].reshape(-1, 4)
    src = int(args["src"][0]) % 4
    lanes = np.arange(4)
    return {"in": args["in"], "src": args["src"],
            "bcast": np.repeat(g[:, src], 4), "rot": g[:, (lanes + 1) % 4].ravel(),
            "wide": g[:, (lanes + 6) % 4].ravel()}
