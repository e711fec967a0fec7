"""The architecture the README draws is the import graph: the README's table lists the
packages in the order of the layers contract lint-imports checks (pyproject.toml), and
the graph has no cycle and no import against that order but the one the README explains
(benchmarks/import_graph.py measures it; lint-imports enforces it in ./dev test)."""

import re
import tomllib
from pathlib import Path

from benchmarks.import_graph import measure

ROOT = Path(__file__).resolve().parent.parent
BELOW_EVERY_STAGE = ("errors", "files", "progress", "campaign")  # modules, not stages


def layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    contract = next(c for c in config["contracts"] if c["type"] == "layers")
    return [name.removeprefix("qgpu.") for name in reversed(contract["layers"])]


def readme_packages() -> list[str]:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Architecture")
    table = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"^\| [^|]+ \| `qgpu/(\w+)(?:\.py)?`", table, re.M)


def test_readme_table_is_the_layer_order():
    assert readme_packages() == [p for p in layers() if p not in BELOW_EVERY_STAGE]


def test_no_cycle_and_only_the_explained_back_arrow():
    graph = measure()
    assert graph["cycles"] == []
    assert [a.split(" (")[0] for a in graph["back_arrows"]] == ["qgpu.suite -> qgpu.runtime"]


def test_every_package_says_what_it_owns_and_may_import():
    import importlib

    for name in layers():
        if name in BELOW_EVERY_STAGE:
            continue
        doc = importlib.import_module(f"qgpu.{name}").__doc__ or ""
        assert "Owns:" in doc and "May import" in doc, f"qgpu.{name}'s docstring"
