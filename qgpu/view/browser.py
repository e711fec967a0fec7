"""view.browser: headless Chromium (Debian's `chromium`) for the viewer's pages: the DOM
after the page's scripts ran, and screenshots (benchmarks/viewer_pages.py, tests/view)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def chromium() -> str | None:
    """The browser's path, or None when none is installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed (e.g. 'apt-get install chromium')")
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--hide-scrollbars", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def _url(page: Path, fragment: str) -> str:
    return Path(page).resolve().as_uri() + (f"#{fragment}" if fragment else "")


def dump_dom(page: Path, fragment: str = "") -> str:
    """The DOM after the page's scripts ran (file://PAGE#FRAGMENT)."""
    return _run(["--dump-dom", _url(page, fragment)]).stdout


def screenshot(page: Path, png: Path, fragment: str = "", size: str = "1440,1300") -> None:
    """A PNG of the page in a window of `size` (width,height)."""
    _run([f"--screenshot={Path(png).resolve()}", f"--window-size={size}", _url(page, fragment)])
