"""switch_dispatch: a switch statement choosing one of 7 operations (and a default)."""
import numpy as np

KERNEL = "switch_dispatch"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "op": rng.integers(0, 9, size, dtype=np.int32),
        "a": rng.integers(-100, 100, size, dtype=np.int32),
        "b": rng.integers(-100, 100, size, dtype=np.int32),
        "out": np.zeros(size, dtype=np.int32)}}


LAUNCHES = [_launch(1, 16, 230), _launch(2, 8, 231), _launch(1, 5, 232)]

_OPS = [lambda x, y: x + y, lambda x, y: x - y, lambda x, y: x * y, lambda x, y: x & y,
        lambda x, y: x | y, lambda x, y: x ^ y, min]


def oracle(args, grid, block):
    out = []
    for o, x, y in zip(args["op"], args["a"], args["b"], strict=True):
        out.append(_OPS[o](int(x), int(y)) if o < len(_OPS) else -1)
    return {"op": args["op"], "a": args["a"], "b": args["b"],
            "out": np.array(out, dtype=np.int32)}
