"""docgen.isa_doc: the generated parts of docs/isa.md and docs/protocol.md. Each doc holds
sections between `<!-- generated:NAME -->` and `<!-- end:NAME -->` markers whose text
comes from the code's tables; `python -m qgpu.docgen isa` rewrites them and the tests check
that the committed docs equal the generated text, so docs cannot drift from the code."""

from __future__ import annotations

import re
from pathlib import Path

from qgpu.isa import limits
from qgpu.isa.ops import OPS, TERMINATORS
from qgpu.protocol.vocab import KINDS, VOCAB_SIZE, base

DOCS = Path(__file__).resolve().parents[2] / "docs"

_CONSTANTS = ("LANES", "REGS", "STAGES", "SLOTS", "ROM_BLOCKS", "GLOBAL_WORDS",
              "SHARED_WORDS", "MAX_CTAS", "MAX_THREADS_PER_CTA",
              "DEFAULT_BLOCK_BUDGET", "BUDGET_PER_WARP", "MODEL_ROM_BLOCKS",
              "MODEL_GLOBAL_WORDS", "MODEL_SHARED_WORDS", "MODEL_MAX_CTAS",
              "MODEL_MAX_THREADS_PER_CTA", "MODEL_MAX_WARPS", "LOCAL_WORDS")


def constants_table() -> str:
    rows = ["| constant | value |", "|---|---|"]
    rows += [f"| `{c}` | {getattr(limits, c)} |" for c in _CONSTANTS]
    return "\n".join(rows)


def ops_table() -> str:
    rows = ["| mnemonic | kind | sources | result |", "|---|---|---|---|"]
    for op in OPS.values():
        rows.append(f"| `{op.mnemonic}` | {op.kind} | {op.n_srcs} | {op.doc} |")
    rows += [f"| `{t}` | terminator | - | {doc} |" for t, doc in TERMINATORS.items()]
    return "\n".join(rows)


def vocab_table() -> str:
    rows = ["| kind | first id | count | meaning |", "|---|---|---|---|"]
    rows += [f"| `{k.name}` | {base(k.name)} | {k.count} | {k.doc} |" for k in KINDS]
    rows.append(f"\nVocabulary size: {VOCAB_SIZE} tokens.")
    return "\n".join(rows)


SECTIONS = {
    "isa.md": {"constants": constants_table, "ops": ops_table},
    "protocol.md": {"vocab": vocab_table},
}


def render(doc: str, text: str, sections: dict | None = None) -> str:
    """`text` (docs/`doc`) with its generated sections rewritten (sections: {doc:
    {section: function}}, default this module's)."""
    for section, fn in (sections or SECTIONS)[doc].items():
        pattern = re.compile(rf"(<!-- generated:{section} -->\n).*?(<!-- end:{section} -->)",
                             re.S)
        if not pattern.search(text):
            raise ValueError(f"docs/{doc} lacks the markers of section '{section}'")
        text = pattern.sub(lambda m, fn=fn: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def rewrite() -> list[Path]:
    """Rewrite the generated sections of docs/isa.md and docs/protocol.md; the files that
    changed."""
    changed = []
    for doc in SECTIONS:
        path = DOCS / doc
        old = path.read_text()
        new = render(doc, old)
        if new != old:
            path.write_text(new)
            changed.append(path)
    return changed
