"""compact_ballot: per group of 4 lanes, stream compaction by ballot rank (no atomics,
deterministic), -1 fill, and the kept count broadcast from the group's lane 0 with an
unsigned shuffle (count[g] = kept * 16 + 0). Blocks are multiples of 4."""
import numpy as np

KERNEL = "compact_ballot"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    n = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-20, 20, n, dtype=np.int32), "out": np.zeros(n, np.int32),
        "count": np.zeros(n // 4, np.uint32)}}


LAUNCHES = [_launch(1, 16, 530), _launch(2, 8, 531), _launch(1, 4, 532)]


def oracle(args, grid, block):
    out, count = [], []
    values = [int(v) for v in args["in"]]
    for g in range(0, len(values), 4):
        kept = [v for v in values[g:g + 4] if v % 3 == 0]
        out += kept + [-1] * (4 - len(kept))
        count.append(len(kept) * 16)
    return {"in": args["in"], "out": np.array(out, np.int32),
            "count": np.array(count, np.uint32)}
