"""dot_f32: atomicAdd on a float, in the machine's order (CTA by CTA, lane by lane): the
oracle adds the float32 products in index order in float32."""
import numpy as np

KERNEL = "dot_f32"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(16) * 10).astype(np.float32)
    y = (rng.standard_normal(16) * 10).astype(np.float32)
    return {"grid": grid, "block": block,
            "args": {"x": x, "y": y, "out": np.zeros(1, np.float32), "n": n}}


LAUNCHES = [_launch(1, 16, 16, 310), _launch(2, 8, 15, 311)]


def oracle(args, grid, block):
    x, y = args["x"], args["y"]
    acc = np.float32(0)
    for i in range(args["n"]):
        acc = np.float32(acc + np.float32(x[i] * y[i]))
    return {"x": x, "y": y, "out": np.array([acc], np.float32)}
