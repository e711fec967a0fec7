"""Memory hygiene for long-lived test workers: the CI machine has 24 GiB for two xdist
workers, and a compiled machine with its engine holds a few GiB. After every test module,
the machines that only that module needed (other specs, margin machines, merged models)
are dropped and the heap is handed back to the system; the default machine, which most
runtime modules share, stays loaded."""

import pytest

from tests.memory import release_memory


@pytest.fixture(autouse=True, scope="module")
def _release_module_memory():
    yield
    release_memory()
