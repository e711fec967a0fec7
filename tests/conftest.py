"""Memory hygiene for long-lived test workers: the CI machine has 24 GiB for two xdist
workers, and a compiled machine with its engine holds a few GiB. After every test module,
the machines that only that module needed (other specs, margin machines, merged models)
are dropped and the heap is handed back to the system; the default machine, which most
runtime modules share, stays loaded.

`ray_cluster`: the local two-CPU Ray of the campaign tests (qgpu.campaign), started once
per test process; the tests that use it are in xdist group "ray", so one process starts
it (~10 s) and its workers keep their loaded machines from test to test."""

import pytest

from tests.memory import release_memory


@pytest.fixture(autouse=True, scope="module")
def _release_module_memory():
    yield
    release_memory()


@pytest.fixture(scope="session")
def ray_cluster():
    pytest.importorskip("ray", reason="the ray extra (pip install 'qgpu[ray]')")
    from qgpu.campaign import RayPool

    pool = RayPool(None, workers=2)
    yield pool
    pool.close()
