"""docs/isa.md and docs/protocol.md hold the code's tables verbatim."""

import pytest

from qgpu.docgen.isa_doc import DOCS, SECTIONS, render


@pytest.mark.parametrize("doc", sorted(SECTIONS))
def test_generated_sections_are_current(doc):
    text = (DOCS / doc).read_text()
    assert render(doc, text) == text, f"run `python -m qgpu.docgen isa` to update docs/{doc}"
