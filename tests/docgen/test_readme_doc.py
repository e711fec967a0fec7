"""README.md holds the code's limits, the suite's counts and the vocabulary's size
verbatim (`python -m qgpu.docgen readme`): a changed limit or a new suite kernel without
the README regenerated fails here."""

import re

from qgpu.docgen import readme_doc
from qgpu.isa import limits


def test_the_readmes_generated_sections_are_current():
    text = readme_doc.README.read_text()
    assert readme_doc.render(text) == text, "run `python -m qgpu.docgen readme`"


def test_a_changed_limit_shows_in_the_limits_section(monkeypatch):
    text = readme_doc.README.read_text()
    monkeypatch.setattr(limits, "MAX_THREADS_PER_CTA", limits.MAX_THREADS_PER_CTA * 64)
    assert readme_doc.render(text) != text


def test_the_readme_states_no_count_outside_its_generated_sections():
    """Counts of the suite are written only by docgen (they went stale three times)."""
    text = readme_doc.README.read_text()
    outside = re.sub(r"<!-- generated:(\w+) -->.*?<!-- end:\1 -->", "", text, flags=re.S)
    assert not re.search(r"\d+ kernels(,| with| and) [\d,]+ launch", outside)
    assert not re.search(r"\d+ launch configurations", outside)
