"""horner_poly: a constant polynomial and one whose coefficients are read in a loop."""
import numpy as np

KERNEL = "horner_poly"


def _launch(block, coef):
    xs = np.arange(-(block // 2), block - block // 2, dtype=np.int32)
    return {"grid": 1, "block": block, "args": {
        "x": xs, "coef": np.array(coef, dtype=np.int32), "ncoef": len(coef),
        "p": np.zeros(block, dtype=np.int32), "q": np.zeros(block, dtype=np.int32)}}


LAUNCHES = [_launch(8, [1, 0, -4, 2]), _launch(16, [2, -3, 5]), _launch(3, [7])]


def oracle(args, grid, block):
    xs = [int(v) for v in args["x"]]
    coef = [int(c) for c in args["coef"][: args["ncoef"]]]
    q = []
    for v in xs:
        q.append(sum(c * v ** (len(coef) - 1 - k) for k, c in enumerate(coef)))
    p = [3 * v**3 - 2 * v**2 + v - 7 for v in xs]
    return {"x": args["x"], "coef": args["coef"], "p": np.array(p, dtype=np.int32),
            "q": np.array(q, dtype=np.int32)}
