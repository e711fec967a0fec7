"""modpow: base^exp mod m by square-and-multiply (remainder by a run-time modulus;
inputs keep base < m so the kernel needs two remainder sites only)."""
import numpy as np

KERNEL = "modpow"


def _launch(grid, block, m, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "base": rng.integers(0, m, size, dtype=np.uint32),
        "exp": rng.integers(0, 2000, size, dtype=np.uint32), "m": m,
        "out": np.zeros(size, dtype=np.uint32)}}


LAUNCHES = [_launch(1, 8, 65521, 260), _launch(2, 4, 97, 261), _launch(1, 3, 2, 262)]


def oracle(args, grid, block):
    m = args["m"]
    out = [pow(int(b), int(e), m) for b, e in zip(args["base"], args["exp"], strict=True)]
    return {"base": args["base"], "exp": args["exp"], "out": np.array(out, dtype=np.uint32)}
