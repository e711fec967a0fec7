"""vector_add_tutorial: CUDA samples' vectorAdd at its own size, <<<4, 256>>> over 1,024
floats (interpreter only until the model machine holds 256-thread blocks)."""
import numpy as np

KERNEL = "vectorAdd"


def _launch(grid, block, n, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "A": rng.random(n, dtype=np.float32), "B": rng.random(n, dtype=np.float32),
        "C": np.zeros(n, np.float32), "numElements": n}}


LAUNCHES = [_launch(4, 256, 1024, 300), _launch(4, 256, 1000, 301)]


def oracle(args, grid, block):
    n = args["numElements"]
    c = args["C"].copy()
    c[:n] = (args["A"][:n] + args["B"][:n]) + np.float32(0.0)
    return {"A": args["A"], "B": args["B"], "C": c}
