"""No drift, measured (docs/design.md section 3): launches teacher-forced through the
instrumented numpy engine (analysis.suite_margins) write their trace, keep every norm the
identity, and every threshold's margin at least 1e3 times the largest deviation of any
threshold input from its ideal value; table reads (registers, result queue, memory
records) come back exactly, since the norm ballast (primitives.gdn_memory)."""

import math

import pytest

from qgpu import suite
from qgpu.analysis.suite_margins import launch_margins, load_margin_machine, suite_margins
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
    spec = next((s for s in suite.load_suite()
                 if any(limits.launch_warps(x["grid"], x["block"]) > machine.spec.warps
                        for x in s.launches)), None)
    if spec is None:
        pytest.skip("the machine accepts every suite launch")
    results = dict(suite_margins(machine, [spec.name]))
    assert any(isinstance(r, str) and "warp" in r for r in results.values())


def test_parallel_jobs_give_the_sequential_reports(machine):
    """benchmarks/margins_model.py --jobs 2: forked workers measure the same reports."""
    from types import SimpleNamespace

    from benchmarks.margins_model import _suite_in_parallel

    names = ["abs_neg_minmax"]
    sequential = list(suite_margins(machine, names))
    args = SimpleNamespace(names=names, per_kernel=False, max_positions=None, jobs=2)
    parallel = list(_suite_in_parallel(machine, args))
    assert [case for case, _, _ in parallel] == [case for case, _ in sequential]
    for (_, got, _), (_, want) in zip(parallel, sequential, strict=True):
        assert got == want
