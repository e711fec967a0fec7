"""qgpu.progress: bars are silent when stderr is not a terminal, forced on/off by
QGPU_PROGRESS, and count what they are given."""

import io

from qgpu import progress as P


def test_silent_off_terminal(monkeypatch, capsys):
    monkeypatch.delenv("QGPU_PROGRESS", raising=False)
    assert list(P.progress(range(5), desc="x")) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""


def test_forced_on_and_off(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setenv("QGPU_PROGRESS", "1")
    monkeypatch.setattr(P.sys, "stderr", buf)
    with P.progress(total=4, desc="layers", unit="layer", leave=True) as bar:
        bar.update(4)
    assert "layers" in buf.getvalue() and "4/4" in buf.getvalue()
    monkeypatch.setenv("QGPU_PROGRESS", "0")
    buf.truncate(0)
    with P.progress(total=4, desc="quiet") as bar:
        bar.update(4)
    assert "quiet" not in buf.getvalue()
    monkeypatch.setenv("QGPU_PROGRESS", "1")
    assert P.progress_enabled(False) is False


def test_callback_draws_one_bar_per_run(monkeypatch):
    buf = io.StringIO()
    monkeypatch.setenv("QGPU_PROGRESS", "1")
    monkeypatch.setattr(P.sys, "stderr", buf)
    cb = P.progress_callback("margins", "pos", leave=True)
    for done in (10, 50, 100):
        cb(done, 100)
    for done in (3, 7):
        cb(done, 7)
    text = buf.getvalue()
    assert "100/100" in text and "7/7" in text and "margins" in text
