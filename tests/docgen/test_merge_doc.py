"""docs/merge.md's size of a 2B merge is generated (docgen.merge_doc): the committed doc
equals the generated text, and the vocabulary row adds up the protocol's GPU tokens."""

import re

from qgpu.docgen import merge_doc
from qgpu.docgen.isa_doc import render
from qgpu.protocol import PROTOCOL_VERSION, VOCAB_SIZE


def _section(text: str, name: str) -> str:
    m = re.search(rf"<!-- generated:{name} -->\n(.*?)<!-- end:{name} -->", text, re.S)
    assert m, name
    return m.group(1)


def test_committed_doc_is_up_to_date():
    text = merge_doc.DOC.read_text()
    assert render("merge.md", text, merge_doc.SECTIONS) == text, \
        "run: .venv/bin/python -m qgpu.docgen merge"


def test_vocabulary_figures_are_the_protocols():
    text = merge_doc.DOC.read_text()
    # Qwen3.5-2B's padded vocabulary, then the GPU tokens, then the pad token
    row = f"| vocabulary (text + GPU + pad) | {248_320 + VOCAB_SIZE + 1:,} = 248,320 + " \
          f"{VOCAB_SIZE:,} + 1 |"
    assert row in _section(text, "merge-size")
    machine = " ".join(_section(text, "merge-machine").split())
    assert f"{VOCAB_SIZE:,} GPU tokens (protocol v{PROTOCOL_VERSION})" in machine


def test_rewrite_fills_the_sections(tmp_path):
    path = tmp_path / "merge.md"
    path.write_text("# doc\n<!-- generated:merge-machine -->\nstale\n<!-- end:merge-machine "
                    "-->\ntext\n<!-- generated:merge-size -->\n<!-- end:merge-size -->\nend\n")
    assert merge_doc.rewrite(path)
    assert not merge_doc.rewrite(path)   # a second run changes nothing
    text = path.read_text()
    assert "stale" not in text and text.endswith("<!-- end:merge-size -->\nend\n")
    assert "| layers (circuit + base) |" in _section(text, "merge-size")
