"""distinct_count_cas: CAS-claimed shared flags count distinct bins (only values whose
bin < blockDim.x take part), atomicExch marks; per CTA."""
import numpy as np

KERNEL = "distinct_count_cas"


def _launch(grid, block, seed, hi):
    rng = np.random.default_rng(seed)
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, hi, grid * block, dtype=np.int32),
        "count": np.zeros(grid, np.int32), "seen": np.zeros(grid * block, np.int32)}}


LAUNCHES = [_launch(1, 16, 490, 16), _launch(2, 8, 491, 6), _launch(4, 4, 492, 100)]


def oracle(args, grid, block):
    count, seen = [], []
    for c in range(grid):
        bins = {int(v) & 15 for v in args["in"][c * block:(c + 1) * block]}
        bins = {b for b in bins if b < block}
        count.append(len(bins))
        seen += [int(t in bins) for t in range(block)]
    return {"in": args["in"], "count": np.array(count, np.int32),
            "seen": np.array(seen, np.int32)}
