"""`python -m qgpu.suite --engine model --ray`: the suite's launches in batches on a local
two-CPU Ray (each worker loads the specs it is handed and the machine once) give the rows
the same table gives in this process, in the same order."""

import pytest

from qgpu import suite
from qgpu.campaign import RayPool

pytestmark = pytest.mark.xdist_group("ray")
KERNELS = ("dot",)


def test_suite_table_on_ray_is_the_local_table(ray_cluster):
    specs = [suite.load_named(name) for name in KERNELS]
    suite.register_engines("model")
    local = suite.suite_table(specs, "model")
    assert len(local) == sum(len(s.launches) for s in specs) and all(r["ok"] for r in local)
    pool = RayPool()
    assert suite.suite_table(specs, "model", pool) == local
    assert sum(pool.worker_batches.values()) == len(local)   # batches of one launch


def test_main_on_ray(ray_cluster, capsys):
    assert suite.main(["dot", "--engine", "model", "--ray"]) == 0
    assert "3/3 launches equal to the oracle" in capsys.readouterr().out
