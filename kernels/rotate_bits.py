"""rotate_bits: rotate left/right by 1..31 and by 8, and a byte swap."""
import numpy as np

from qgpu.suite import u32_array

KERNEL = "rotate_bits"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 2**32, size, dtype=np.uint32),
        "amount": rng.integers(1, 32, size, dtype=np.int32),
        "rotl": np.zeros(size, np.uint32), "rotr": np.zeros(size, np.uint32),
        "rot8": np.zeros(size, np.uint32), "bswap": np.zeros(size, np.uint32)}}


LAUNCHES = [_launch(1, 8, 310), _launch(2, 6, 311)]


def _rotl(x, k):
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


def oracle(args, grid, block):
    xs = [int(x) for x in args["in"]]
    ks = [int(k) for k in args["amount"]]
    return {"in": args["in"], "amount": args["amount"],
            "rotl": u32_array([_rotl(x, k) for x, k in zip(xs, ks, strict=True)]),
            "rotr": u32_array([_rotl(x, 32 - k) for x, k in zip(xs, ks, strict=True)]),
            "rot8": u32_array([_rotl(x, 8) for x in xs]),
            "bswap": u32_array([int.from_bytes(x.to_bytes(4, "little"), "big") for x in xs])}
