"""scan_serial: exclusive scan by a single thread's loop, then a barrier and a per-thread
use of the shared total."""
import numpy as np

KERNEL = "scan_serial"


def _launch(block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": 1, "block": block, "args": {
        "in": rng.integers(-50, 50, n, dtype=np.int32), "out": np.zeros(n, dtype=np.int32),
        "total": np.zeros(1, dtype=np.int32), "n": n}}


LAUNCHES = [_launch(8, 8, 150), _launch(16, 12, 151), _launch(3, 3, 152)]


def oracle(args, grid, block):
    v = args["in"].astype(np.int64)
    total = int(v.sum())
    excl = np.concatenate([[0], np.cumsum(v)[:-1]])
    return {"in": args["in"], "out": excl * 2 - total,
            "total": np.array([total], dtype=np.int32)}
