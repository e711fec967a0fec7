"""shfl_up_down: shfl_up/shfl_down (width 4) for every delta 1..3, combined in a
position-weighted sum; out-of-group sources return the lane's own value."""
import numpy as np

KERNEL = "shfl_up_down"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-100, 100, size, dtype=np.int32),
        "up": np.zeros(size, np.int32), "down": np.zeros(size, np.int32)}}


LAUNCHES = [_launch(1, 4, 410), _launch(1, 12, 411), _launch(4, 4, 412)]


def oracle(args, grid, block):
    v = [int(x) for x in args["in"]]
    up, down = [], []
    for i in range(len(v)):
        lane, g0 = i % 4, i - i % 4
        u = d = 0
        for delta in (1, 2, 3):
            u = u * 7 + (v[g0 + lane - delta] if lane - delta >= 0 else v[i])
            d = d * 7 + (v[g0 + lane + delta] if lane + delta < 4 else v[i])
        up.append(u)
        down.append(d)
    return {"in": args["in"], "up": np.array(up, np.int32), "down": np.array(down, np.int32)}
