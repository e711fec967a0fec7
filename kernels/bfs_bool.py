"""bfs_bool: one BFS level over a random CSR graph with bool frontier / next / visited
masks (byte loads and stores: lanes write different bytes of one word in the same
instruction). The masks are bool arrays packed 4 to a word."""
import numpy as np

KERNEL = "bfs_bool"
N = 16


def _graph(seed):
    rng = np.random.default_rng(seed)
    degree = rng.integers(0, 4, N)
    row = np.concatenate([[0], np.cumsum(degree)]).astype(np.int32)
    col = rng.integers(0, N, int(row[-1])).astype(np.int32)
    return row, col, rng


def _launch(grid, block, seed):
    row, col, rng = _graph(seed)
    visited = rng.random(N) < 0.4
    frontier = visited & (rng.random(N) < 0.7)
    cost = np.where(visited, 3, -1).astype(np.int32)
    return {"grid": grid, "block": block, "args": {
        "row": row, "col": np.concatenate([col, [0]]).astype(np.int32),
        "frontier_w": frontier.view(np.uint8).view(np.uint32).copy(),
        "next_w": np.zeros(N // 4, np.uint32),
        "visited_w": visited.view(np.uint8).view(np.uint32).copy(),
        "cost": cost, "n": N}}


LAUNCHES = [_launch(1, 16, 290), _launch(4, 4, 291)]


def oracle(args, grid, block):
    row, col = args["row"], args["col"]
    frontier = args["frontier_w"].view(np.uint8).astype(bool).copy()
    visited = args["visited_w"].view(np.uint8).astype(bool)
    nxt = np.zeros(N, bool)
    cost = args["cost"].copy()
    for v in np.flatnonzero(frontier):
        for u in col[row[v]:row[v + 1]]:
            if not visited[u]:
                cost[u] = cost[v] + 1
                nxt[u] = True
    frontier[:] = False
    return {"row": row, "col": col, "visited_w": args["visited_w"], "cost": cost,
            "frontier_w": frontier.astype(np.uint8).view(np.uint32),
            "next_w": nxt.astype(np.uint8).view(np.uint32)}
