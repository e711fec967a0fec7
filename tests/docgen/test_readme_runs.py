"""The README's example runs as shown: its Python block (on the model and the
interpreter, printing the sum the comment promises) and its `qgpu run` command on the
kernel the Python block defines. Other code blocks of the README are the two set-up
commands (tests/cli/test_cli.py) and the chat commands, which need a Qwen3.5-2B
checkpoint (not run here)."""

import re
import runpy
import shlex

import pytest

from qgpu.docgen.readme_doc import README


def blocks(lang: str) -> list[str]:
    """The README's fenced blocks opened with ```lang (lang "": a bare fence)."""
    out, current = [], None
    for line in README.read_text().splitlines(keepends=True):
        if current is None and line.startswith("```"):
            current = [] if line.strip() == "```" + lang else False
        elif current is not None and line.startswith("```"):
            if current is not False:
                out.append("".join(current))
            current = None
        elif current:
            current.append(line)
        elif current == []:
            current.append(line)
    return out


@pytest.mark.slow
def test_the_python_example_prints_what_it_says(tmp_path, capsys, monkeypatch):
    (example,) = blocks("python")
    path = tmp_path / "example.py"
    path.write_text(example)
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path))
    out = capsys.readouterr().out
    assert "[10 11 12 13 14 15 16 17]" in out


@pytest.mark.slow
def test_the_run_command_checks_the_example_kernel(tmp_path, capsys, monkeypatch):
    from qgpu.cli import main

    (example,) = blocks("python")
    source = re.search(r'src = """(.*?)"""', example, re.S).group(1)
    (tmp_path / "vadd.cu").write_text(source)
    command = next(b for b in blocks("") if "qgpu run vadd.cu" in b)
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[0].endswith("qgpu") and "--check" in argv
    monkeypatch.chdir(tmp_path)
    assert main(argv[1:]) == 0
    assert "after  [10, 11, 12, 13, 14, 15, 16, 17]" in capsys.readouterr().out
