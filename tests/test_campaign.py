"""qgpu.campaign: batches in this process (LocalPool) and on a local two-CPU Ray
(RayPool): results in the batches' order, the setup once per worker process, a task's own
error raised to the caller, a worker killed in the middle of a batch replaced and its
batch run again elsewhere, workers of other sources and unimportable tasks refused."""

import os
import signal
import threading
import time

import pytest

from qgpu import campaign
from qgpu.campaign import CampaignError, LocalPool, RayPool, batch_size, batched, open_pool
from qgpu.errors import LaunchError
from tests import campaign_tasks as tasks

ray_tests = pytest.mark.xdist_group("ray")


def test_batches_and_their_size():
    assert batched(range(7), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert batch_size(1000, 2) == 32 and batch_size(40, 2) == 3 and batch_size(1, 2) == 1
    with pytest.raises(CampaignError, match="at least 1"):
        batched([1], 0)


def test_local_pool_runs_the_setup_once_and_keeps_the_order():
    calls = []

    def setup():
        calls.append(1)
        return "state"

    out = list(LocalPool().map(tasks.squares, batched(range(10), 3), setup))
    assert [r for rows in out for r, _ in rows] == [x * x for x in range(10)]
    assert calls == [1] and {s for rows in out for _, s in rows} == {"state"}


def test_open_pool_refuses_a_word_that_is_no_address():
    assert isinstance(open_pool(None), LocalPool)
    with pytest.raises(CampaignError, match="--ray dot: not an address"):
        open_pool("dot")


def test_a_worker_of_other_sources_refuses_the_batch():
    with pytest.raises(CampaignError, match="runs qgpu sources"):
        campaign._run_batch(None, tasks.squares, [1], "0" * 64)
    host_pid, rows = campaign._run_batch(tasks.worker_pid, tasks.squares, [3],
                                         campaign.sources_digest())
    assert host_pid.endswith(f":{os.getpid()}") and rows == [(9, os.getpid())]


@ray_tests
def test_ray_gives_the_local_results_in_order(ray_cluster):
    batches = batched(range(40), 3)
    pool = RayPool()
    got = [r for rows in pool.map(tasks.squares, batches, tasks.worker_pid) for r in rows]
    assert [x for x, _ in got] == [x * x for x in range(40)]
    # each batch ran on a worker process whose setup ran there (its own pid), once
    pids = {pid for _, pid in got}
    assert {int(w.split(":")[1]) for w in pool.worker_batches} == pids
    assert sum(pool.worker_batches.values()) == len(batches) and pool.workers == 2


@ray_tests
def test_ray_raises_the_tasks_own_error_and_refuses_what_workers_cannot_import(ray_cluster):
    with pytest.raises(LaunchError, match="item 7 refused"):
        list(RayPool().map(tasks.refuse_seven, batched(range(12), 2)))
    with pytest.raises(CampaignError, match="cannot import"):
        list(RayPool().map(lambda state, batch: batch, [[1]]))


@ray_tests
def test_a_worker_killed_mid_batch_is_replaced_and_its_batch_run_again(ray_cluster, tmp_path):
    """SIGKILL to the process running batch 4 while it runs it: Ray runs the batch again
    on another worker process, and the campaign ends with every result, in order."""
    items = batched(range(24), 2)
    batches = [(str(tmp_path), b) for b in items]
    victim = {}

    def kill_the_runner_of_batch_4():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not victim:
            started = list(tmp_path.glob("8-*"))
            if started:
                victim["pid"] = int(started[0].name.split("-")[1])
                os.kill(victim["pid"], signal.SIGKILL)
            time.sleep(0.02)

    killer = threading.Thread(target=kill_the_runner_of_batch_4)
    killer.start()
    pool = RayPool()
    got = [r for rows in pool.map(tasks.slow_squares, batches) for r in rows]
    killer.join()
    assert got == [x * x for x in range(24)]
    runs = sorted(int(p.name.split("-")[1]) for p in tmp_path.glob("8-*"))
    assert victim and victim["pid"] in runs and len(set(runs)) == 2   # run again, elsewhere
