"""Tasks for tests/test_campaign.py's pools: module-level, so that Ray's workers import
them by name (qgpu.campaign's rule for a task and its setup)."""

import os
import time
from pathlib import Path

from qgpu.errors import LaunchError


def worker_pid() -> int:
    """A setup: the worker process's id (a worker calls it once)."""
    return os.getpid()


def squares(state, batch) -> list:
    """Each item squared, with the setup's state."""
    return [(x * x, state) for x in batch]


def refuse_seven(state, batch) -> list:
    """A task whose batch holding 7 raises a QgpuError (not retried: raised to the caller)."""
    if 7 in batch:
        raise LaunchError("item 7 refused")
    return list(batch)


def slow_squares(state, batch) -> list:
    """Each item squared, slowly; a batch of (directory, items) first writes a marker file
    '<first item>-<pid>' there, so that a test sees which process runs which batch."""
    directory, items = batch
    Path(directory, f"{items[0]}-{os.getpid()}").touch()
    time.sleep(0.4 * len(items))
    return [x * x for x in items]
