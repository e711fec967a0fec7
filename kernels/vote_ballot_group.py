"""vote_ballot_group: ballot masked to the own group of 4 lanes (warp-size independent),
its popcount and each lane's rank. Groups past the end of a partial warp have fewer
lanes; their missing lanes vote 0."""
import numpy as np

KERNEL = "vote_ballot_group"


def _launch(grid, block, seed):
    rng = np.random.default_rng(seed)
    size = grid * block
    return {"grid": grid, "block": block, "args": {
        "in": rng.integers(-2, 3, size, dtype=np.int32), "mask": np.zeros(size, np.uint32),
        "count": np.zeros(size, np.int32), "rank": np.zeros(size, np.int32)}}


LAUNCHES = [_launch(1, 16, 380), _launch(1, 6, 381), _launch(2, 8, 382), _launch(4, 3, 383)]


def oracle(args, grid, block):
    mask, count, rank = [], [], []
    for c in range(grid):
        votes = [int(v > 0) for v in args["in"][c * block:(c + 1) * block]]
        for t in range(block):
            g0 = t - t % 4
            bits = sum(votes[g0 + k] << k for k in range(4) if g0 + k < block)
            mask.append(bits)
            count.append(bin(bits).count("1"))
            rank.append(bin(bits & ((1 << (t % 4)) - 1)).count("1"))
    return {"in": args["in"], "mask": np.array(mask, np.uint32),
            "count": np.array(count, np.int32), "rank": np.array(rank, np.int32)}
