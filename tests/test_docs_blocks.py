"""Every shell and Python block of README.md and docs/**/*.md runs here, through Sybil:
`python` blocks (doctest form where they show output), `console` blocks (`$ COMMAND` lines,
their output checked with `...` matching anything) and `bash` blocks (run, exit 0). A block
that cannot run here is preceded by `<!-- skip: next "reason" -->` (needs a GPU, a 2B
checkpoint, minutes of model time); blocks of other text are fenced as `text`."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

import pytest
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
FENCE = re.compile(r"^\s*```(\w*)\s*$", re.M)
RUN_LANGUAGES = {"python", "console", "bash"}
OTHER_LANGUAGES = {"text", "cuda", "c", "ptx", "json", "toml"}


def shell_environment() -> dict:
    """The test's interpreter's bin first on PATH (its `qgpu`), this checkout on PYTHONPATH."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{env.get('PYTHONPATH', '')}"
    return env


def run_shell(command: str) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=shell_environment(),
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise AssertionError(f"`{command}` exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


def evaluate_console(example) -> str | None:
    """`$ COMMAND` lines with their expected output below them (ELLIPSIS)."""
    checker = doctest.OutputChecker()
    blocks = re.split(r"(?m)^\$ ", example.parsed)[1:]
    for block in blocks:
        command, _, want = block.partition("\n")
        got = run_shell(command)
        if not checker.check_output(want, got, doctest.ELLIPSIS):
            return f"`{command}` printed:\n{got}\nexpected:\n{want}"
    return None


def evaluate_bash(example) -> None:
    run_shell(example.parsed)


SYBIL = Sybil(parsers=[PythonCodeBlockParser(), SkipParser(),
                       CodeBlockParser(language="console", evaluator=evaluate_console),
                       CodeBlockParser(language="bash", evaluator=evaluate_bash)],
              path=str(ROOT))


def test_every_skip_says_why():
    bare = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in DOCS
            for m in re.finditer(r"<!-- skip:[^>]*-->", path.read_text())
            if not re.fullmatch(r'<!-- skip: next "[^"]+" -->', m.group(0))]
    assert not bare, f"a skipped block needs `<!-- skip: next \"reason\" -->`: {bare}"


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_blocks_run(path):
    """The document's blocks in order (a later block may use an earlier one's names), in one
    test so that no test runner can split or reorder them; skipped blocks say why in the
    document itself."""
    for example in SYBIL.parse(path).examples():
        try:
            example.evaluate()
        except unittest.SkipTest:   # the block's `<!-- skip: next "reason" -->`
            continue
