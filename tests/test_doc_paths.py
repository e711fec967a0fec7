"""The docs point only to files that exist: every repository path the README and docs/
name in backticks (qgpu/..., tests/..., benchmarks/..., docs/..., kernels/...) is there."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"`((?:qgpu|tests|benchmarks|docs|kernels)/[A-Za-z0-9_./-]*)`")


def test_every_named_path_exists():
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        for match in PATH.finditer(doc.read_text()):
            path = match.group(1).rstrip("/.")
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {path}")
    assert not missing
