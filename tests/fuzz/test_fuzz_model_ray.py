"""`python -m qgpu.fuzz.model_launches --ray`: a campaign on a local two-CPU Ray (its
workers load the machine once each) reports the same cases, verdicts, token counts and
final memories, in the same order, as the same campaign in this process; a worker killed
in the middle of the campaign is replaced and the campaign completes with the same
results."""

import json
import os
import signal
import threading
import time

import pytest

from qgpu.campaign import RayPool
from qgpu.fuzz.model_launches import fuzz, main
from qgpu.isa.asm import disassemble

pytestmark = pytest.mark.xdist_group("ray")
CASES = 24          # a few dozen: ~5 s in this process, less on two workers
SMALL = {"max_blocks": 8, "max_memory": 16}


def verdicts(results) -> list[tuple]:
    return [(r.source, r.seed, r.status, r.detail, r.prompt_tokens, r.trace_tokens,
             r.extra.get("memory"), r.extra.get("cuda"),
             disassemble(r.case.program) if r.case else None) for r in results]


@pytest.fixture(scope="module")
def local():
    from qgpu.runtime.compiled import load_machine

    results = fuzz(load_machine(progress=False), CASES, seed=11, source="both", **SMALL)
    assert len(results) == CASES and all(r.status == "ok" for r in results), \
        [(r.seed, r.status, r.detail) for r in results if r.status != "ok"]
    return verdicts(results)


def test_ray_campaign_gives_the_local_cases_and_verdicts(ray_cluster, local):
    pool = RayPool()
    assert verdicts(fuzz(None, CASES, seed=11, source="both", pool=pool, **SMALL)) == local
    assert sum(pool.worker_batches.values()) == CASES // 2   # batches of 2 cases


def test_a_killed_worker_does_not_stop_the_campaign(ray_cluster, local):
    """SIGKILL to a worker once the first batches are back (it is in its next batch by
    then, most often): Ray runs its batch again on another worker process and starts a
    new one; the results are the same."""
    pool = RayPool()
    killed = []

    def kill_a_worker():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not pool.worker_batches:
            time.sleep(0.02)
        if pool.worker_batches:
            time.sleep(0.2)
            killed.append(int(next(iter(pool.worker_batches)).split(":")[1]))
            os.kill(killed[0], signal.SIGKILL)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    results = fuzz(None, CASES, seed=11, source="both", pool=pool, **SMALL)
    killer.join()
    assert killed and verdicts(results) == local


def test_main_on_ray_prints_the_summary_and_writes_the_outcomes(ray_cluster, capsys, tmp_path):
    outcomes = tmp_path / "outcomes.jsonl"
    assert main(["--cases", "4", "--seed", "2", "--source", "isa", "--outcomes",
                 str(outcomes), "--ray"]) == 0
    out = capsys.readouterr().out
    assert "Ray ready" in out and "cases run: 4" in out and "mismatches: 0" in out
    lines = [json.loads(line) for line in outcomes.read_text().splitlines()]
    assert [x["seed"] for x in lines] == [2 * 1_000_003 + i for i in range(4)]
    assert all(x["status"] == "ok" and x["trace_tokens"] > 0 for x in lines)
