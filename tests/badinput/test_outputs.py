"""Issue 29, outputs that cannot destroy inputs or lose work: --html (and every --out)
refuses a path that is one of the inputs, a folder, or in a missing folder, before the
launch runs; a page that cannot be written after the launch still prints the results;
merge/export write under a temporary name, so an interrupted run leaves nothing that
looks like an output and never blocks a rerun; `qgpu merge` refuses nonsense shard sizes,
a llama base and a broken tokenizer.json before writing any weight."""

import errno
import json
import os
import subprocess
import sys

import pytest

from qgpu.cli import main
from qgpu.files import new_output

from .test_rows import one_error

COPY = "__global__ void k(const int *a, int *o) { o[threadIdx.x] = a[threadIdx.x] + 1; }\n"
RUN = ["--grid", "1", "--block", "4", "--engine", "interp", "--arg", "a=1,2,3,4",
       "--arg", "o=zeros:4"]


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(COPY)
    return path


def test_html_equal_to_the_input_is_refused_and_the_input_kept(kernel, capsys):
    err = one_error(capsys, "run", ["run", str(kernel), *RUN, "--html", str(kernel)])
    assert "one of the inputs" in err and kernel.read_text() == COPY


def test_trace_html_equal_to_the_input_is_refused(tmp_path, capsys):
    stream = tmp_path / "t.json"
    assert main(["run", str(_write(tmp_path)), *RUN, "--json"]) == 0
    capsys.readouterr()
    stream.write_text(json.dumps({"prompt": [], "trace": []}))
    before = stream.read_text()
    err = one_error(capsys, "trace", ["trace", str(stream), "--html", str(stream)])
    assert "one of the inputs" in err and stream.read_text() == before


def _write(tmp_path):
    path = tmp_path / "c.cu"
    path.write_text(COPY)
    return path


@pytest.mark.parametrize("where, match", [("folder", "is a folder"),
                                          ("missing/p.html", "does not exist")])
def test_html_path_checked_before_the_launch(kernel, capsys, where, match):
    (kernel.parent / "folder").mkdir()
    err = one_error(capsys, "run", ["run", str(kernel), *RUN, "--html",
                                    str(kernel.parent / where)])
    assert match in err and "after" not in capsys.readouterr().out


def test_a_page_that_cannot_be_written_still_prints_the_results(kernel, capsys,
                                                               monkeypatch):
    from pathlib import Path

    def full_disk(path, data):  # the disk fills while the page is written
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(Path, "write_bytes", full_disk)
    page = kernel.parent / "p.html"
    assert main(["run", str(kernel), *RUN, "--html", str(page)]) == 1
    captured = capsys.readouterr()
    assert "after  [2, 3, 4, 5]" in captured.out  # the launch's results are not lost
    assert f"no space left on the device writing {page}" in captured.err
    assert len(captured.err.strip().splitlines()) == 1
    assert not list(kernel.parent.glob("p.html*"))


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-1"])
def test_merge_shard_gb_must_be_a_positive_size(tmp_path, capsys, value):
    err = one_error(capsys, "merge", ["merge", "--base", str(tmp_path), "--out",
                                      str(tmp_path / "out"), f"--shard-gb={value}"])
    assert "--shard-gb" in err and "positive" in err


def test_merge_names_a_llama_base(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps(
        {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64}))
    err = one_error(capsys, "merge", ["merge", "--base", str(tmp_path), "--out",
                                      str(tmp_path / "out")])
    assert "is a llama model (LlamaForCausalLM), not Qwen3.5" in err


def test_merge_refuses_a_broken_tokenizer_before_writing(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen3_5"}))
    (tmp_path / "tokenizer.json").write_text('{"model": {"vocab": ')
    out = tmp_path / "out"
    err = one_error(capsys, "merge", ["merge", "--base", str(tmp_path), "--out", str(out)])
    assert "tokenizer.json is broken" in err and not out.exists()


def test_merge_out_equal_to_the_base_is_refused(tmp_path, capsys):
    err = one_error(capsys, "merge", ["merge", "--base", str(tmp_path), "--out",
                                      str(tmp_path)])
    assert "one of the inputs" in err


def test_a_killed_writer_never_blocks_a_rerun(tmp_path):
    """A writer killed mid-output (SIGKILL: no cleanup of its own) leaves only its
    temporary name; the rerun deletes it and writes the output."""
    out = tmp_path / "model.gguf"
    code = ("import os, sys; from qgpu.files import new_output\n"
            f"with new_output({str(out)!r}, folder=False) as tmp:\n"
            "    tmp.write_bytes(b'partial'); os.kill(os.getpid(), 9)\n")
    subprocess.run([sys.executable, "-c", code], check=False)
    left = list(tmp_path.iterdir())
    assert not out.exists() and len(left) == 1 and left[0].name.startswith(".qgpu-tmp-")
    with new_output(out, folder=False) as tmp:
        tmp.write_bytes(b"whole")
    assert list(tmp_path.iterdir()) == [out] and out.read_bytes() == b"whole"


def test_an_interrupted_folder_output_leaves_nothing(tmp_path):
    out = tmp_path / "merged"
    with pytest.raises(KeyboardInterrupt), new_output(out, folder=True) as tmp:
        tmp.mkdir(exist_ok=True)
        (tmp / "model-00001.safetensors").write_bytes(b"x" * 1000)
        raise KeyboardInterrupt
    assert not list(tmp_path.iterdir())
    with new_output(out, folder=True) as tmp:
        tmp.mkdir(exist_ok=True)
        (tmp / "config.json").write_text("{}")
    assert (out / "config.json").read_text() == "{}"
