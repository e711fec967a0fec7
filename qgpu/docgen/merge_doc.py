"""docgen.merge_doc: the generated parts of docs/merge.md: the size of a 2B merge as
`merge.size` predicts it (its table, and the machine and vocabulary figures the table is
computed from: merge.size's machine constants, which tests/circuit/machine/
test_layout_doc.py keeps equal to the compiled machine's, and the protocol's vocabulary).
Sections between `<!-- generated:NAME -->` and `<!-- end:NAME -->` markers, as
docgen.isa_doc's; `python -m qgpu.docgen merge` rewrites them and the tests check that
the committed doc equals the generated text."""

from __future__ import annotations

import textwrap
from pathlib import Path

from qgpu.docgen.isa_doc import DOCS, render
from qgpu.merge.size import MACHINE_HIDDEN, MACHINE_LAYERS, MACHINE_NONZEROS, machine_size
from qgpu.protocol import PROTOCOL_VERSION, VOCAB_SIZE

DOC = DOCS / "merge.md"


def machine_figures() -> str:
    text = (f"The machine circuit's figures (`merge.size`'s constants, measured on the "
            f"compiled machine without the fault detector): hidden {MACHINE_HIDDEN:,}, "
            f"{MACHINE_LAYERS} layers, {MACHINE_NONZEROS / 1e6:.2f} M nonzero weights; "
            f"{VOCAB_SIZE:,} GPU tokens (protocol v{PROTOCOL_VERSION}).")
    return textwrap.fill(text, 90)


def size_table() -> str:
    return machine_size().markdown()


SECTIONS = {"merge.md": {"merge-machine": machine_figures, "merge-size": size_table}}


def rewrite(path: Path = DOC) -> bool:
    """Rewrite docs/merge.md's generated sections; True when the file changed."""
    old = path.read_text()
    new = render("merge.md", old, SECTIONS)
    if new != old:
        path.write_text(new)
    return new != old
