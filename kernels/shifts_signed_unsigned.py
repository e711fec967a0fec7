"""shifts_signed_unsigned: x >> k (arithmetic for int, logical for unsigned) and x << k,
k in 0..31 (larger amounts are undefined in C)."""
import numpy as np

from qgpu.suite import i32_array, u32, u32_array

KERNEL = "shifts_signed_unsigned"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    a = rng.integers(-2**31, 2**31 - 1, size, dtype=np.int32)
    a[0] = -1
    return {"grid": grid, "block": block, "args": {
        "a": a, "amount": rng.integers(0, 32, size, dtype=np.int32),
        "sar": np.zeros(size, np.int32), "shr": np.zeros(size, np.uint32),
        "shl": np.zeros(size, np.int32)}}


LAUNCHES = [_launch(1, 16, 290), _launch(2, 6, 291)]


def oracle(args, grid, block):
    sar, shr, shl = [], [], []
    for x, k in zip(args["a"], args["amount"], strict=True):
        x, k = int(x), int(k)
        sar.append(x >> k)           # Python's >> on negative ints is arithmetic
        shr.append(u32(x) >> k)
        shl.append(u32(x) << k)
    return {"a": args["a"], "amount": args["amount"], "sar": i32_array(sar),
            "shr": u32_array(shr), "shl": i32_array(shl)}
