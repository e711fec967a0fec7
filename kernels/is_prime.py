"""is_prime: trial division with a data-dependent trip count and a break."""
import numpy as np

KERNEL = "is_prime"

LAUNCHES = [
    {"grid": 1, "block": 16, "args": {
        "in": np.array([-7, 0, 1, 2, 3, 4, 5, 9, 25, 97, 221, 499, 1009, 4096, 7919, 9973],
                       dtype=np.int32), "out": np.zeros(16, dtype=np.int32)}},
    {"grid": 3, "block": 4, "args": {
        "in": np.arange(100, 112, dtype=np.int32), "out": np.zeros(12, dtype=np.int32)}},
]


def _prime(x):
    return x >= 2 and all(x % d for d in range(2, int(x**0.5) + 1))


def oracle(args, grid, block):
    return {"in": args["in"],
            "out": np.array([_prime(int(x)) for x in args["in"]], dtype=np.int32)}
