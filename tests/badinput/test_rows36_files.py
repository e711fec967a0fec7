"""Issue 36, lost files: qgpu deletes only the temporaries it made (a user's
`finetune.tmp.54321/` beside a merge's output stays); `--html` never replaces a device,
FIFO or socket and writes through a symlink to a regular file; `merge --out` a symlink to
an empty folder writes the merge there (not written and then deleted); `merge --base` a
qgpu merge is refused before anything is compiled or written; `--model /nonexist` says
it does not exist."""

import os
import stat
import subprocess
import sys

import pytest

from qgpu.cli import main
from qgpu.files import (
    FOLDER_MARKER,
    OutputError,
    atomic_write,
    clean_leftovers,
    new_output,
    output_problem,
    tmp_name,
)
from qgpu.model.checkpoint import save_checkpoint
from tests.merge.helpers import random_base

from .test_rows import one_error

COPY = "__global__ void k(const int *a, int *o) { o[threadIdx.x] = a[threadIdx.x] + 1; }\n"
RUN = ["--grid", "1", "--block", "4", "--engine", "interp", "--arg", "a=1,2,3,4",
       "--arg", "o=zeros:4"]


def _dead_pid() -> int:
    return int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)


def test_only_qgpus_own_temporaries_are_cleaned(tmp_path):
    dead = _dead_pid()
    users = [tmp_path / f"finetune.tmp.{dead}", tmp_path / f"notes.{dead}.tmp",
             tmp_path / f"model.tmp{dead}"]
    users[0].mkdir()
    (users[0] / "adapter.bin").write_bytes(b"weights")
    users[1].write_text("mine")
    users[2].write_text("mine too")
    # qgpu's name on a folder without its marker (a user's, renamed so): kept as well
    unmarked = tmp_path / f".qgpu-tmp-{dead}-0123abcd-out"
    unmarked.mkdir()
    file_left = tmp_path / f".qgpu-tmp-{dead}-89abcdef-model.gguf"
    file_left.write_bytes(b"partial")
    folder_left = tmp_path / f".qgpu-tmp-{dead}-00ff00ff-merged"
    folder_left.mkdir()
    (folder_left / FOLDER_MARKER).write_text("")
    (folder_left / "model.safetensors").write_bytes(b"half")
    linked = tmp_path / f".qgpu-tmp-{dead}-11111111-link"
    linked.symlink_to(users[0])
    assert sorted(clean_leftovers(tmp_path)) == sorted([file_left, folder_left])
    assert all(p.exists() for p in [*users, unmarked, linked])
    assert (users[0] / "adapter.bin").read_bytes() == b"weights"


def test_a_merge_beside_a_users_tmp_folder_keeps_it(tmp_path, capsys):
    dead = _dead_pid()
    save_checkpoint(random_base("h64_tied"), tmp_path / "base")
    keep = tmp_path / f"finetune.tmp.{dead}"
    keep.mkdir()
    (keep / "step-100.bin").write_bytes(b"x")
    assert main(["merge", "--base", str(tmp_path / "base"), "--out", str(tmp_path / "out"),
                 "--circuit", "counter", "--quiet"]) == 0
    assert (keep / "step-100.bin").read_bytes() == b"x"
    assert (tmp_path / "out" / "qgpu_merge.json").is_file()
    assert not (tmp_path / "out" / FOLDER_MARKER).exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".qgpu-tmp-")]


def test_a_killed_folder_writer_is_cleaned_by_the_rerun(tmp_path):
    out = tmp_path / "merged"
    code = ("import os; from qgpu.files import new_output\n"
            f"with new_output({str(out)!r}, folder=True) as tmp:\n"
            "    (tmp / 'a.safetensors').write_bytes(b'half'); os.kill(os.getpid(), 9)\n")
    subprocess.run([sys.executable, "-c", code], check=False,
                   env={**os.environ, "PYTHONPATH": os.getcwd()})
    (left,) = list(tmp_path.iterdir())
    assert left.name.startswith(".qgpu-tmp-") and (left / FOLDER_MARKER).is_file()
    with new_output(out, folder=True) as tmp:
        (tmp / "config.json").write_text("{}")
    assert [p.name for p in tmp_path.iterdir()] == ["merged"]
    assert [p.name for p in out.iterdir()] == ["config.json"]


@pytest.fixture
def kernel(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(COPY)
    return path


def test_html_to_a_fifo_is_refused_before_the_launch(tmp_path, kernel, capsys):
    fifo = tmp_path / "page.fifo"
    os.mkfifo(fifo)
    err = one_error(capsys, "run", ["run", str(kernel), *RUN, "--html", str(fifo)])
    assert "FIFO" in err and "not a regular file" in err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_device_is_never_replaced():
    assert "a device" in output_problem("/dev/null")   # refused without writing a byte
    with pytest.raises(OutputError, match="a device"), atomic_write("/dev/null"):
        raise AssertionError("atomic_write must refuse before yielding")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_html_through_a_symlink_writes_its_destination(tmp_path, kernel, capsys):
    real = tmp_path / "pages" / "launch.html"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.html"
    link.symlink_to(real)
    assert main(["run", str(kernel), *RUN, "--html", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("<!") and len(real.read_text()) > 1000
    assert not [p for p in real.parent.iterdir() if p.name != "launch.html"]


def test_merge_out_a_symlink_to_an_empty_folder(tmp_path, capsys):
    save_checkpoint(random_base("h64_tied"), tmp_path / "base")
    (tmp_path / "disk").mkdir()
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "disk")
    assert main(["merge", "--base", str(tmp_path / "base"), "--out", str(link),
                 "--circuit", "counter", "--quiet"]) == 0
    assert link.is_symlink() and (link / "qgpu_merge.json").is_file()
    assert (tmp_path / "disk" / "model.safetensors").is_file() or any(
        p.suffix == ".safetensors" for p in (tmp_path / "disk").iterdir())


def test_merge_of_a_merge_is_refused_before_writing(tmp_path, capsys):
    save_checkpoint(random_base("h64_tied"), tmp_path / "base")
    assert main(["merge", "--base", str(tmp_path / "base"), "--out",
                 str(tmp_path / "merged"), "--circuit", "counter", "--quiet"]) == 0
    capsys.readouterr()
    err = one_error(capsys, "merge", ["merge", "--base", str(tmp_path / "merged"), "--out",
                                      str(tmp_path / "again"), "--circuit", "counter"])
    assert "already a qgpu checkpoint" in err and "qgpu_merge.json" in err
    assert not (tmp_path / "again").exists()
    # a copy without the layout file: its tokenizer's GPU tokens give it away
    (tmp_path / "merged" / "qgpu_merge.json").unlink()
    (tmp_path / "merged" / "tokenizer.json").write_text(
        '{"model": {"type": "BPE", "vocab": {}}, "added_tokens": '
        '[{"id": 150, "content": "<|gpu:HALT|>"}]}')
    err = one_error(capsys, "merge", ["merge", "--base", str(tmp_path / "merged"), "--out",
                                      str(tmp_path / "again")])
    assert "already has GPU tokens" in err and "<|gpu:HALT|>" in err
    assert not [p for p in tmp_path.iterdir() if p.name not in ("base", "merged")]


@pytest.mark.parametrize("command", [["run", "K", *RUN[:4], "--arg", "a=1,2,3,4", "--arg",
                                      "o=zeros:4", "--engine", "model", "--model", "NOPE"],
                                     ["chat", "--model", "NOPE"]])
def test_a_missing_model_says_it_does_not_exist(tmp_path, kernel, capsys, command):
    missing = str(tmp_path / "nonexist")
    argv = [missing if w == "NOPE" else str(kernel) if w == "K" else w for w in command]
    err = one_error(capsys, command[0], argv)
    assert f"{missing} does not exist" in err and "qgpu_merge.json" not in err


def test_tmp_names_are_unique_and_recognisable(tmp_path):
    a, b = tmp_name(tmp_path / "x.bin"), tmp_name(tmp_path / "x.bin")
    assert a != b and a.name.startswith(f".qgpu-tmp-{os.getpid()}-")
