"""analysis.suite_margins.suite_margins' selection of launches (the margin reports themselves
are tests/analysis/test_suite_margins.py): per kernel its shortest multi-warp launch, and the
position limit."""

from types import SimpleNamespace

from qgpu import suite
from qgpu.analysis import suite_margins
from qgpu.isa import limits
from qgpu.runtime.compiled import DEFAULT_SPEC

KERNELS = ["vec_add", "dot", "reduce_sum_shared"]


def _selected(monkeypatch, **kwargs):
    seen = []

    def fake_launch_margins(machine, program, grid, block, memory, **kw):
        tokens = suite_margins.launch_tokens(program, grid, block, memory)[0]
        seen.append((grid, block, len(tokens)))
        return "report"

    monkeypatch.setattr(suite_margins, "launch_margins", fake_launch_margins)
    machine = SimpleNamespace(spec=DEFAULT_SPEC)
    cases = [case for case, result in suite_margins.suite_margins(machine, KERNELS, **kwargs)
             if result == "report"]
    return cases, seen


def test_every_launch_by_default(monkeypatch):
    cases, _ = _selected(monkeypatch)
    specs = [s for s in suite.load_suite() if s.name in KERNELS]
    assert len(cases) == sum(len(s.launches) for s in specs)


def test_per_kernel_takes_the_shortest_multi_warp_launch(monkeypatch):
    cases, seen = _selected(monkeypatch, per_kernel=True)
    all_cases, everything = _selected(monkeypatch)
    assert sorted(c.split("[")[0] for c in cases) == sorted(KERNELS)
    for (grid, block, positions), case in zip(seen, cases, strict=True):
        assert limits.launch_warps(grid, block) >= 2, case
        kernel = case.split("[")[0]
        rivals = [n for (g, b, n), c in zip(everything, all_cases, strict=True)
                  if c.split("[")[0] == kernel and limits.launch_warps(g, b) >= 2]
        assert positions == min(rivals), case


def test_max_positions_leaves_out_longer_launches(monkeypatch):
    _, everything = _selected(monkeypatch)
    limit = sorted(n for _, _, n in everything)[len(everything) // 2]
    _, seen = _selected(monkeypatch, max_positions=limit)
    assert seen and len(seen) < len(everything) and all(n <= limit for _, _, n in seen)
