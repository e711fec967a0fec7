"""README.md's generated sections (limits, suite counts, machine figures, performance) equal
what `python -m qgpu.docgen readme` writes now, so a changed limit, an added suite kernel or a
new benchmark result fails here until the README is regenerated."""

import json

import pytest

from qgpu.docgen import readme_doc


def test_readme_generated_sections_are_current():
    text = readme_doc.README.read_text()
    assert readme_doc.render(text) == text, (
        "README.md's generated sections are stale: run `python -m qgpu.docgen readme`")


def test_a_changed_limit_makes_the_readme_stale(monkeypatch):
    text = readme_doc.README.read_text()
    monkeypatch.setattr(readme_doc.limits, "MODEL_GLOBAL_WORDS", 256)
    assert readme_doc.render(text) != text


def test_every_result_file_says_when_where_and_how(tmp_path):
    for result in readme_doc.load_results():
        assert {"benchmark", "date", "load", "machine", "source", "rows"} <= set(result)
        for row in result["rows"]:
            assert {"what", "figure", "how"} <= set(row)
    (tmp_path / "x.json").write_text(json.dumps({"date": "2026-01-01", "load": [1.0, 2.0],
        "source": "measured", "rows": [{"what": "w", "figure": "f", "how": "h"}]}))
    assert "| w | f | 1-2 | 2026-01-01, measured | h |" in readme_doc.performance_table(tmp_path)


def test_missing_markers_are_named():
    with pytest.raises(ValueError, match="limits"):
        readme_doc.render("no markers here")
