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


def examples():
    for path in DOCS:
        document = SYBIL.parse(path)
        for example in document.examples():
            yield pytest.param(example, id=f"{path.relative_to(ROOT)}:{example.line}")


def test_every_block_says_its_language():
    unlabeled = []
    for path in DOCS:
        fences = FENCE.findall(path.read_text())
        for language in fences[0::2]:   # opening fences only
            if language not in RUN_LANGUAGES | OTHER_LANGUAGES:
                unlabeled.append(f"{path.relative_to(ROOT)}: ```{language}")
    assert not unlabeled, ("label every block (python, console, bash: run here; text: not "
                           f"a command): {unlabeled}")


@pytest.mark.parametrize("example", list(examples()))
def test_doc_block_runs(example):
    example.evaluate()
