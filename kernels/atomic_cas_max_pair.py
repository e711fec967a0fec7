"""atomic_cas_max_pair: argmax through a CAS loop on packed (value << 8 | index) words,
checked against atomicMax on the same packing (values < 2^24)."""
import numpy as np

KERNEL = "atomic_cas_max_pair"


def _launch(grid, block, seed, hi):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "val": rng.integers(0, hi, grid * block, dtype=np.uint32),
        "best": np.zeros(1, np.uint32), "best2": np.zeros(1, np.uint32)}}


LAUNCHES = [_launch(1, 16, 480, 2**24), _launch(4, 4, 481, 4), _launch(2, 7, 482, 100)]


def oracle(args, grid, block):
    packed = max((int(v) << 8) | i for i, v in enumerate(args["val"]))
    return {"val": args["val"], "best": np.array([packed], np.uint32),
            "best2": np.array([packed], np.uint32)}
