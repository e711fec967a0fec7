"""No drift, measured (docs/design.md section 3): launches teacher-forced through the
instrumented numpy engine (analysis.suite_margins) write their trace, keep every norm the
identity, and every threshold's margin at least 1e3 times the largest deviation of any
threshold input from its ideal value; table reads (registers, result queue, memory
records) come back exactly, since the norm ballast (primitives.gdn_memory)."""

import math

import pytest

from qgpu import suite
from qgpu.analysis.suite_margins import (
    launch_margins,
    load_margin_machine,
    measure,
    pool_margins,
    suite_margins,
)
from qgpu.cuda.shape import launch_shape
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from tests.runtime.programs import MEMORY_PROGRAMS

pytestmark = pytest.mark.slow

MUL = ("block 0:\n  tid r1\n  sub r2, r1, 3\n  mul r3, r2, 0xfffffffd\n  mul r4, r3, r3\n"
       "  .writeback r2, r3, r4\n  exit\n")


@pytest.fixture(scope="module")
def machine():
    return load_margin_machine()


def check(report):
    assert report.exact, str(report)
    assert report.ratio >= 1e3, str(report)
    assert report.forced > 0 and report.wrong == 0 and report.norm_failures == 0
    assert report.min_logit_gap >= 2 and not report.unchecked
    # the smallest margin is a step's 0.75 unit off (1/4 - 88.72 / 1024), never less
    assert 0.16 < report.min_margin.value < 0.17
    assert report.max_read_deviation.value == 0, str(report)  # exact table reads


def test_memory_launch(machine):
    memory = [3 * a + 1 for a in range(8)]
    report = launch_margins(machine, assemble(MEMORY_PROGRAMS["same_word"]), 1, 4, memory)
    check(report)
    assert math.isinf(report.ratio)  # the decode path is exact end to end


def test_mul_launch(machine):
    report = launch_margins(machine, assemble(MUL), 1, 3)
    check(report)


@pytest.mark.parametrize("name", ["dot", "abs_neg_minmax", "atomic_exch_conservation"])
def test_suite_launches(machine, name):
    cases = list(suite_margins(machine, [name]))
    measured = [(case, r) for case, r in cases if not isinstance(r, str)]
    assert measured, cases
    for _, report in measured:
        check(report)


def test_refused_launches_are_reported_not_measured(machine):
    def warps(launch) -> int:
        shape = launch_shape(launch["grid"], launch["block"])
        return limits.launch_warps(shape.ctas, shape.threads)

    spec = next((s for s in suite.load_suite()
                 if any(warps(x) > machine.spec.warps for x in s.launches)), None)
    if spec is None:
        pytest.skip("the machine accepts every suite launch")
    results = dict(suite_margins(machine, [spec.name]))
    assert any(isinstance(r, str) and "the model machine runs" in r for r in results.values())


@pytest.mark.xdist_group("ray")
def test_ray_workers_measure_the_local_reports(machine, ray_cluster):
    """benchmarks/margins_model.py --ray: pool_margins on a local two-CPU Ray gives the
    reports measured here, in order; a refused launch's reason passes through. One batch:
    one worker compiles the margin machine (~25 s), the other core stays free."""
    from qgpu.campaign import RayPool

    items = [("mul", (assemble(MUL), 1, 3, [])), ("refused", "LaunchError: too many warps"),
             ("same_word", (assemble(MEMORY_PROGRAMS["same_word"]), 1, 4, [1, 4, 7, 10]))]
    local = [measure(machine, item) for item in items]
    remote = list(pool_margins(RayPool(), items, batch=len(items)))   # one worker compiles
    assert [r[:2] for r in remote] == [r[:2] for r in local]
    assert remote[1][1] == "LaunchError: too many warps"
