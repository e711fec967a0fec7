"""progress: the one helper every long step uses for a progress bar (tqdm on stderr).

    from qgpu.progress import progress
    for layer in progress(layers, desc="compile", unit="layer"):
        ...
    with progress(total=n_bytes, desc="merge", unit="B", unit_scale=True) as bar:
        bar.update(k)

The bar is drawn only when stderr is a terminal (tqdm's `disable=None`), so logs, pipes,
CI and tests stay clean; QGPU_PROGRESS=0 turns every bar off, QGPU_PROGRESS=1 forces
them on (e.g. to see them through `tee`). `enabled=False` turns one bar off (a caller's
own `progress=False`/`--quiet`). The object returned is a tqdm bar (update, set_postfix,
close, iteration) in every case; a disabled bar does nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm

from qgpu.errors import setting_ignored

__all__ = ["progress", "progress_callback", "progress_enabled"]


def progress_enabled(enabled: bool = True) -> bool | None:
    """tqdm's `disable` flag inverted: False (off), True (on), None (on when stderr is a
    terminal), after QGPU_PROGRESS."""
    if not enabled:
        return False
    env = os.environ.get("QGPU_PROGRESS", "").strip().lower()
    if env in ("0", "false", "no", "off"):
        return False
    if env in ("1", "true", "yes", "on"):
        return True
    if env:
        setting_ignored("QGPU_PROGRESS", os.environ["QGPU_PROGRESS"], "0 or 1",
                        "bars drawn when stderr is a terminal")
    return None


def progress(iterable: Iterable | None = None, *, total: float | None = None,
             desc: str | None = None, unit: str = "it", enabled: bool = True,
             **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr, silent unless stderr is a terminal (see the module doc).
    Extra keyword arguments go to tqdm (unit_scale, unit_divisor, leave, postfix...)."""
    on = progress_enabled(enabled)
    disable = None if on is None else not on
    kwargs.setdefault("leave", False)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable,
                file=sys.stderr, **kwargs)


def progress_callback(desc: str, unit: str = "it", enabled: bool = True, **kwargs: Any):
    """A `callback(done, total)` for code that reports progress that way (e.g.
    analysis.margins.margin_report): it draws one bar per run of calls, starting a new
    bar when `total` changes or `done` goes back (kwargs: progress's)."""
    state: dict = {"bar": None}

    def callback(done: int, total: int) -> None:
        bar = state["bar"]
        if bar is None or bar.total != total or done < bar.n:
            if bar is not None:
                bar.close()
            bar = state["bar"] = progress(total=total, desc=desc, unit=unit, enabled=enabled,
                                         **kwargs)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            state["bar"] = None
    return callback
