"""vote_group_any_all: any/all per group of 4 from a masked ballot (partial groups count
only their lanes) and a leader (lowest voting lane) per group."""
import numpy as np

KERNEL = "vote_group_any_all"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(0, 20, size, dtype=np.int32), "flags": np.zeros(size, np.int32),
        "leader_count": np.full(-(-size // 4), -1, np.int32)}}


LAUNCHES = [_launch(1, 16, 390), _launch(1, 7, 391), _launch(2, 8, 392),
            {"grid": 1, "block": 8, "args": {
                "in": np.array([10, 11, 12, 13, 0, 1, 2, 3], np.int32),
                "flags": np.zeros(8, np.int32), "leader_count": np.full(2, -1, np.int32)}}]


def oracle(args, grid, block):
    flags = []
    leaders = args["leader_count"].copy()
    for c in range(grid):
        votes = [int(v >= 10) for v in args["in"][c * block:(c + 1) * block]]
        for g0 in range(0, block, 4):
            lanes = votes[g0:g0 + 4]
            for _ in lanes:
                flags.append(int(any(lanes)) | int(all(lanes)) << 1)
            if any(lanes):
                leaders[(c * block + g0) // 4] = sum(lanes)
    return {"in": args["in"], "flags": np.array(flags, np.int32), "leader_count": leaders}
