"""warp_ballot_scan_32: CUDA's 32-lane inclusive scan (__shfl_up_sync, offsets 1..16) and
ballot compaction with __any_sync/__all_sync, per warp of existing members (CTAs of at
most 16 threads are one partial warp each)."""
import numpy as np

KERNEL = "warp_ballot_scan_32"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    n = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-1000, 1000, n, dtype=np.int32), "scan": np.zeros(n, np.int32),
        "packed": np.zeros(n, np.int32), "info": np.zeros(n, np.uint32)}}


LAUNCHES = [_launch(1, 16, 3211), _launch(2, 8, 3212), _launch(1, 11, 3213),
            _launch(2, 7, 3214)]


def oracle(args, grid, block):
    x = args["in"].astype(np.int64)
    scan, packed, info = [], [], []
    for c in range(grid):
        cta = x[c * block:(c + 1) * block]
        for w in range(0, block, 32):
            warp = cta[w:w + 32]
            scan += np.cumsum(warp).tolist()
            kept = [int(v) for v in warp if v > 0]
            packed += kept + [0] * (len(warp) - len(kept))
            word = len(kept) | int((warp < -500).any()) << 8 | int((warp > -900).all()) << 9
            info += [word] * len(warp)
    return {"in": args["in"], "scan": np.array(scan, np.int32),
            "packed": np.array(packed, np.int32), "info": np.array(info, np.uint32)}
