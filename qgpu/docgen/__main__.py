"""python -m qgpu.docgen [isa] [circuit] [layers] [merge] [readme]: rewrite the generated parts of
docs/."""

from __future__ import annotations

import argparse
import sys

from qgpu.docgen import circuit_doc, isa_doc, layers_doc, merge_doc, readme_doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m qgpu.docgen", description=__doc__)
    known = ("isa", "circuit", "layers", "merge", "readme")
    # no `choices=`: Python 3.11's argparse checks an empty `nargs="*"` list against them
    ap.add_argument("parts", nargs="*", help=f"which generated docs to rewrite: "
                    f"{', '.join(known)} (default: all)")
    parts = ap.parse_args(argv).parts or list(known)
    unknown = sorted(set(parts) - set(known))
    if unknown:
        ap.error(f"unknown part {', '.join(unknown)}; known: {', '.join(known)}")
    if "isa" in parts:
        changed = isa_doc.rewrite()
        print(f"docs/isa.md, docs/protocol.md: {len(changed)} rewritten", file=sys.stderr)
    if "circuit" in parts:
        changed = circuit_doc.rewrite()
        print(f"{circuit_doc.DOC}: {'rewritten' if changed else 'up to date'}", file=sys.stderr)
    if "layers" in parts:
        changed = layers_doc.rewrite()
        print(f"{layers_doc.DOC}: {'rewritten' if changed else 'up to date'}", file=sys.stderr)
    if "merge" in parts:
        changed = merge_doc.rewrite()
        print(f"{merge_doc.DOC}: {'rewritten' if changed else 'up to date'}", file=sys.stderr)
    if "readme" in parts:
        changed = readme_doc.rewrite()
        print(f"{readme_doc.README}: {'rewritten' if changed else 'up to date'}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
