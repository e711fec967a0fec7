"""files: writing and reading the files qgpu makes so that they cannot lie or lose work.

- `atomic_write(target)`: a temporary name beside the target (`.qgpu-tmp-PID-RANDOM-NAME`,
  same folder, so the rename is atomic) renamed into place only when the writer finished;
  an exception or Ctrl-C deletes it: an interrupted run leaves nothing that looks like an
  output and never blocks a rerun. A full disk is an `OutputError` naming the target. A
  target that is a symlink is written where it points (the link stays); one that exists
  and is not a regular file or folder (a device, FIFO, socket) is refused, never replaced.
- `clean_leftovers(folder)`: deletes the temporaries of qgpu writers that were killed
  (their process is gone), which `atomic_write` could not delete: only entries named by
  `tmp_name` (a user's `finetune.tmp.54321/` is never touched), plain files, or folders
  holding qgpu's marker file (`new_output` puts it in a folder output until it is done).
- `folder_problem(folder, need)`: why a folder cannot take `need` more bytes (missing and
  not creatable, a file, not writable, short of space), or None; checked before a long
  compile so that its result is not lost at the end.
- `note_folder_problem(problem, consequence)`: that one line about an unusable cache
  folder, once per process and problem.
- `crc32_of(path, start)`: the checksum stored files carry (plan files, compile-cache
  entries), over the file from `start` on, read through a mapping in large pieces.
- `output_problem(path, inputs)` / `check_output`: an output path that would overwrite
  one of the inputs, or cannot be written (a folder, a missing folder), refused before the
  work runs.
- `finite_json(value)` / `json_dumps(value)`: JSON every parser reads: Python writes a
  float that is not finite as NaN / Infinity, which is not JSON (JavaScript's JSON.parse
  rejects it); qgpu writes it as the string "nan", "inf" or "-inf" (`qgpu run --json`,
  the launch page's data; docs/cuda.md).
- `read_text_limited(path, limit)`: a file's text, refusing one larger than `limit` (a
  device such as /dev/zero is read up to the limit, never to the end of memory).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import mmap
import os
import re
import secrets
import shutil
import stat
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

from qgpu.errors import QgpuError

TMP_PREFIX = ".qgpu-tmp-"
# `tmp_name`'s names only: the writer's pid, 8 random hex digits, the target's name
TMP_NAME = re.compile(r"\.qgpu-tmp-(\d+)-[0-9a-f]{8}-.")
FOLDER_MARKER = ".qgpu-partial-output"  # inside a folder output until it is complete
CHUNK = 1 << 24


class OutputError(QgpuError):
    """An output that cannot be written: the disk is full, the folder is missing or not
    writable, the path is a folder or one of the inputs."""


class StoredFileError(QgpuError, ValueError):
    """A stored plan or cache entry that is not what was written (checksum mismatch, short,
    not the format); the message names the file."""


class InputTooLarge(QgpuError):
    """An input file larger than the limit the command reads (/dev/zero, a wrong file)."""


def tmp_name(target: Path) -> Path:
    """A name beside `target` that only qgpu makes (clean_leftovers recognises it)."""
    return target.with_name(f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}-"
                            f"{target.name}"[:255])


def not_regular(path: Path) -> str | None:
    """Why `path` cannot be replaced by an output: it exists and is neither a regular file
    nor a folder (symlinks followed: a device, FIFO or socket), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file")
    return (f"it is {kind}, not a regular file (qgpu writes its outputs as regular files "
            "and never replaces anything else)")


def resolved_output(target: str | Path) -> Path:
    """`target`, or where it points when it is a symlink (the link is kept and the output
    is written at its destination)."""
    target = Path(target)
    return Path(os.path.realpath(target)) if target.is_symlink() else target


def is_empty_folder(path: Path) -> bool:
    """A folder holding nothing but new_output's marker."""
    return path.is_dir() and all(p.name == FOLDER_MARKER for p in path.iterdir())


def _space_error(err: OSError, target: Path) -> OutputError:
    return OutputError(f"no space left on the device writing {target}: nothing was "
                       "written under that name" if err.errno == errno.ENOSPC else
                       f"cannot write {target}: {err.strerror or err}")


@contextlib.contextmanager
def atomic_write(target: str | Path, folder: bool = False) -> Iterator[Path]:
    """Yields the temporary path to write (a file; with `folder` a folder, already made,
    holding FOLDER_MARKER until it is complete); renamed to `target` (a symlink's
    destination) when the block ends normally, deleted when it raises (any exception,
    Ctrl-C included). An OSError while writing (ENOSPC, EACCES) becomes an OutputError
    naming the target; a target that is a device, FIFO or socket is refused first."""
    target = resolved_output(target)
    problem = not_regular(target)
    if problem:
        raise OutputError(f"cannot write {target}: {problem}")
    tmp = tmp_name(target)
    try:
        if folder:
            tmp.mkdir()
            (tmp / FOLDER_MARKER).write_text("a qgpu output being written; deleted when "
                                             "its writer is gone\n")
        yield tmp
        if folder:
            (tmp / FOLDER_MARKER).unlink(missing_ok=True)
        os.replace(tmp, target)  # over a file or an empty folder; a full folder refuses
    except OSError as err:
        _remove(tmp)
        raise _space_error(err, target) from err
    except BaseException:
        _remove(tmp)
        raise


@contextlib.contextmanager
def new_output(out: str | Path, folder: bool) -> Iterator[Path]:
    """`atomic_write` for a command's new output (a folder, or a file): refused when it
    exists (a folder: unless empty), when its folder cannot take it; killed earlier
    runs' temporaries beside it are deleted first (they never block a rerun)."""
    out = resolved_output(out)  # a symlink to an empty folder: that folder is replaced
    if out.exists() and not (folder and out.is_dir() and not any(out.iterdir())):
        raise OutputError(f"{out} exists" + (" and is not empty" if folder else ""))
    parent = out.parent if str(out.parent) else Path(".")
    problem = folder_problem(parent)
    if problem:
        raise OutputError(f"cannot write {out}: {problem}")
    clean_leftovers(parent)
    with atomic_write(out, folder) as tmp:
        yield tmp


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process: alive
    return True


def _ours(path: Path) -> int | None:
    """The writer pid of a temporary qgpu made (tmp_name: a plain file, or a folder with
    FOLDER_MARKER inside), or None for anything else."""
    found = TMP_NAME.match(path.name)
    if found is None or path.is_symlink():
        return None
    if path.is_file() or (path.is_dir() and (path / FOLDER_MARKER).is_file()):
        return int(found.group(1))
    return None


def clean_leftovers(folder: str | Path) -> list[Path]:
    """Deletes the temporaries qgpu writers left in `folder` (see _ours) whose process is
    gone; returns them. Nothing else is touched, whatever its name."""
    removed = []
    folder = Path(folder)
    if not folder.is_dir():
        return removed
    for path in folder.glob(f"{TMP_PREFIX}*"):
        pid = _ours(path)
        if pid is not None and pid != os.getpid() and not _alive(pid):
            _remove(path)
            removed.append(path)
    return removed


def folder_problem(folder: str | Path, need: int = 0) -> str | None:
    """Why `folder` cannot take a new file of `need` bytes, or None (it is created when
    missing)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return f"cannot create {folder}: {err.strerror or err}"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    free = shutil.disk_usage(folder).free
    if free < need:
        return f"{folder} has {free / 2**20:.0f} MiB free, {need / 2**20:.0f} MiB needed"
    return None


_noted: set[str] = set()


def note_folder_problem(problem: str, consequence: str, who: str = "qgpu") -> None:
    """One line on stderr about a folder that cannot be used (`problem`, from
    folder_problem) and what happens instead, said once per process and problem: the
    compile cache and the native kernel share the cache folder, and the first to find it
    unusable says so for both."""
    if problem in _noted:
        return
    _noted.add(problem)
    print(f"{who}: the cache folder cannot be used ({problem}): {consequence}",
          file=sys.stderr, flush=True)


def crc32_of(path: str | Path, start: int = 0, end: int | None = None) -> int:
    """zlib's CRC-32 of the file's bytes from `start` to `end` (None: its end; negative:
    counted from its end)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        size = size if end is None else (size + end if end < 0 else min(end, size))
        if size <= start:
            return zlib.crc32(b"")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            crc = 0
            for a in range(start, size, CHUNK):
                crc = zlib.crc32(view[a:min(a + CHUNK, size)], crc)
            return crc


def output_problem(path: str | Path, inputs: tuple = (), folder: bool = False) -> str | None:
    """Why `path` cannot be an output (a file; a folder when `folder`) of a command that
    reads `inputs`, or None."""
    path = Path(path)
    for item in inputs:
        if item is None:
            continue
        try:
            same = path.exists() and Path(item).exists() and os.path.samefile(path, item)
        except OSError:
            same = False
        if same or path.resolve() == Path(item).resolve():
            return f"{path} is one of the inputs: it would be overwritten"
    if path.is_dir() and not folder:
        return f"{path} is a folder"
    if not_regular(path):
        return not_regular(path)
    parent = path.parent if str(path.parent) else Path(".")
    if folder:
        return None  # new_output creates the folders above it, then checks them
    if not parent.is_dir():
        return f"the folder {parent} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists()
                                                    and not os.access(path, os.W_OK)):
        return f"{path} is not writable"
    return None


def check_output(path: str | Path | None, inputs: tuple = (), folder: bool = False) -> None:
    """OutputError when `path` (None: no output) cannot be written (output_problem)."""
    if path is None:
        return
    problem = output_problem(path, inputs, folder)
    if problem:
        raise OutputError(f"cannot write {path}: {problem}")


def read_bytes_limited(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of `path`, read at most `limit` + 1 bytes: InputTooLarge beyond the limit
    (a device such as /dev/zero included)."""
    with open(path, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise InputTooLarge(f"{path}: this {what} is larger than {limit / 2**20:.0f} MiB, "
                            "the most qgpu reads (is it the right file?)")
    return data


def read_text_limited(path: str | Path, limit: int, what: str = "file") -> str:
    """read_bytes_limited as text (UTF-8, undecodable bytes replaced)."""
    return read_bytes_limited(path, limit, what).decode("utf-8", errors="replace")


def finite_json(value):
    """`value` with every float that is not finite (in lists, tuples and dicts) replaced
    by "nan", "inf" or "-inf"."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value


def json_dumps(value, **options) -> str:
    """json.dumps of `finite_json(value)`: never NaN or Infinity (allow_nan=False)."""
    return json.dumps(finite_json(value), allow_nan=False, **options)
