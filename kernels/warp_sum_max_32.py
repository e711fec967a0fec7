"""warp_sum_max_32: CUDA's 32-lane __shfl_down_sync tree (offsets 16..1) and lane-0
broadcast, over each warp's existing members (CTAs of at most 16 threads are one partial
warp each): every thread gets its warp's sum and maximum and its last member's input."""
import numpy as np

KERNEL = "warp_sum_max_32"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    n = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-1000, 1000, n, dtype=np.int32), "sum": np.zeros(n, np.int32),
        "max_out": np.zeros(n, np.int32), "last": np.zeros(n, np.int32)}}


LAUNCHES = [_launch(1, 16, 3201), _launch(2, 8, 3202), _launch(1, 13, 3203),
            _launch(4, 3, 3204)]


def oracle(args, grid, block):
    x = args["in"].astype(np.int64)
    sums, maxes, lasts = [], [], []
    for c in range(grid):
        cta = x[c * block:(c + 1) * block]
        for w in range(0, block, 32):
            warp = cta[w:w + 32]
            sums += [warp.sum()] * len(warp)
            maxes += [warp.max()] * len(warp)
            lasts += [warp[-1]] * len(warp)
    return {"in": args["in"], "sum": np.array(sums, np.int32),
            "max_out": np.array(maxes, np.int32), "last": np.array(lasts, np.int32)}
