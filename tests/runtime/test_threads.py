"""Issue 29: the model engine from several threads at once, and a long-lived process's
memory. A warmed-up kernel launched from 4 threads gives each launch the result it gives
alone (it segfaulted: the native plan's scratch was shared), and launches do not pile up
their states (RSS grew by each finished launch's arrays)."""

import threading

import numpy as np
import pytest

import qgpu

pytestmark = pytest.mark.slow

KERNEL = """
__global__ void k(int *out, int x) {
  out[threadIdx.x] = x * 3 + threadIdx.x;
}
"""


def _rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.fixture(scope="module")
def kernel():
    k = qgpu.compile(KERNEL).get_function("k")
    k(1, 4, (np.zeros(4, np.int32), 0))  # warmed up: the machine loaded
    return k


def test_four_threads_launch_at_once(kernel):
    def launch(x):
        out = np.zeros(4, np.int32)
        res = kernel(1, 4, (out, x))
        return out.tolist(), res.trace

    alone = {x: launch(x) for x in range(4)}
    got: dict = {}
    errors: list = []

    def work(x):
        try:
            for _ in range(3):
                got.setdefault(x, []).append(launch(x))
        except Exception as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    workers = [threading.Thread(target=work, args=(x,)) for x in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    for x in range(4):
        assert alone[x][0] == [3 * x + t for t in range(4)]
        assert got[x] == [alone[x]] * 3


def test_rss_flat_over_launches(kernel):
    """Each launch's state is ~18 MB (the memory layers' recurrent state): 100 launches
    kept alive would be ~1 GB (the old bound let 64 pile up)."""
    out = np.zeros(4, np.int32)
    for x in range(5):
        kernel(1, 4, (out, x))
    before = _rss_mib()
    for x in range(100):
        kernel(1, 4, (out, x))
    assert out.tolist() == [3 * 99 + t for t in range(4)]
    assert _rss_mib() - before < 100
