"""conv2d_3x3: zero-padded 3x3 convolution (cross-correlation) with continue in a nested
loop; 4x4, 3x5 and 2x2 images."""
import numpy as np

KERNEL = "conv2d_3x3"


def _launch(grid, block, rows, cols, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "img": rng.integers(-9, 10, rows * cols, dtype=np.int32),
        "w": rng.integers(-3, 4, 9, dtype=np.int32),
        "out": np.zeros(rows * cols, np.int32), "rows": rows, "cols": cols}}


LAUNCHES = [_launch(1, 16, 4, 4, 500), _launch(2, 8, 3, 5, 501), _launch(1, 4, 2, 2, 502)]


def oracle(args, grid, block):
    rows, cols = args["rows"], args["cols"]
    img = np.pad(args["img"].astype(np.int64).reshape(rows, cols), 1)
    w = args["w"].astype(np.int64).reshape(3, 3)
    out = np.zeros((rows, cols), np.int64)
    for r in range(rows):
        for c in range(cols):
            out[r, c] = (img[r:r + 3, c:c + 3] * w).sum()
    return {"img": args["img"], "w": args["w"], "out": out.ravel()}
