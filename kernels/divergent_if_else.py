"""divergent_if_else: nested if/else on lane parity and value, reconverging tail."""
import numpy as np

KERNEL = "divergent_if_else"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-20, 21, grid * block, dtype=np.int32),
        "out": np.zeros(grid * block, dtype=np.int32)}}


LAUNCHES = [_launch(1, 16, 210), _launch(2, 7, 211), _launch(4, 4, 212)]


def oracle(args, grid, block):
    out = []
    for t, v in enumerate(int(x) for x in args["in"]):
        if t % 2:
            r = -v * 3 if v < 0 else v + 100
        else:
            r = v - 10 if v > 10 else (v * v if v > 0 else 7)
        out.append(r + t)
    return {"in": args["in"], "out": np.array(out, dtype=np.int32)}
