"""histogram_shared: shared-memory histogram (bins = v % nbins, unsigned) merged across
CTAs. nbins <= blockDim.x so every bin is cleared and merged by some thread."""
import numpy as np

KERNEL = "histogram_shared"


def _launch(grid, block, nbins, seed):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 2**32, grid * block, dtype=np.uint32),
        "hist": np.zeros(8, dtype=np.int32), "nbins": nbins}}


LAUNCHES = [_launch(1, 16, 8, 170), _launch(2, 8, 5, 171), _launch(4, 4, 3, 172)]


def oracle(args, grid, block):
    nbins = args["nbins"]
    counts = np.bincount((args["in"] % nbins).astype(np.int64), minlength=8)
    return {"in": args["in"], "hist": counts}
