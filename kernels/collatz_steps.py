"""collatz_steps: steps to reach 1 for each start value; lanes loop different counts."""
import numpy as np

KERNEL = "collatz_steps"


def _launch(grid, block, starts):
    return {"grid": grid, "block": block, "args": {
        "start": np.array(starts, dtype=np.uint32), "steps": np.zeros(len(starts), np.int32)}}


LAUNCHES = [_launch(1, 8, [1, 2, 3, 6, 7, 9, 27, 97]),
            _launch(2, 3, [5, 11, 15, 19, 25, 31])]


def _steps(x):
    n = 0
    while x != 1:
        x = 3 * x + 1 if x % 2 else x // 2
        n += 1
    return n


def oracle(args, grid, block):
    return {"start": args["start"],
            "steps": np.array([_steps(int(x)) for x in args["start"]], dtype=np.int32)}
