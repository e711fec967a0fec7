"""A real browser for the viewer's tests: headless Chromium (Debian's `chromium`, which
`./dev test` installs when missing and root) renders a page, and the rendered DOM is
parsed with the standard library's HTML parser into a small element tree."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    exe = chromium()
    assert exe, "no chromium"
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--hide-scrollbars", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


def dump_dom(page: Path, fragment: str = "") -> str:
    """The DOM after the page's scripts ran (file://PAGE#FRAGMENT)."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    return _run(["--dump-dom", url]).stdout


def screenshot(page: Path, png: Path, fragment: str = "", size: str = "1440,1300") -> None:
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    _run([f"--screenshot={png.resolve()}", f"--window-size={size}", url])


@dataclass
class Node:
    tag: str
    attrs: dict
    children: list = field(default_factory=list)
    parent: Node | None = None

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs) -> list[Node]:
        out = []
        for n in self.iter():
            if tag and n.tag != tag:
                continue
            if cls and cls not in n.classes:
                continue
            if any(n.attrs.get(k.replace("_", "-")) != v for k, v in attrs.items()):
                continue
            out.append(n)
        return out

    def by_id(self, ident: str) -> Node:
        found = self.find_all(id=ident)
        assert len(found) == 1, f"#{ident}: {len(found)} elements"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, [], self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(html: str) -> Node:
    b = _Builder()
    b.feed(html)
    return b.root
