"""The viewer on the compiled model: recording margins changes nothing the model writes
(the same trace and memory as greedy generation), every written token has a positive
top-1 minus top-2 margin, and `qgpu run --engine model --check --html` draws them with
the check's verdict (in headless Chromium when it is installed)."""

import json
import re

import numpy as np
import pytest

import qgpu
from qgpu.cli import main
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch, record_margins
from qgpu.suite import kernel_source
from tests.view import browser

DOT_CU = kernel_source("dot")   # the demo kernel, kernels/dot.cu

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


def _dot_launch():
    k = qgpu.compile(DOT_CU, filename="dot.cu", engine="interp").get_function("dot")
    args = (np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32),
            np.zeros(1, np.int32), 3)
    program, memory, _, _ = k.link(1, 3, args)
    return program, memory


def test_margins_change_nothing_the_model_writes(machine):
    program, memory = _dot_launch()
    plain = generate_launch(machine, program, 1, 3, memory)
    recorded = generate_launch(machine, program, 1, 3, memory, margins=True)
    assert plain.margins is None
    assert recorded.trace == plain.trace and recorded.memory == plain.memory
    assert len(recorded.margins) == len(recorded.trace) == 26
    assert min(recorded.margins) > 0.5
    with record_margins():
        assert generate_launch(machine, program, 1, 3, memory).margins == recorded.margins


def test_model_run_page_shows_margins_and_the_check(machine, tmp_path, capsys):
    cu = tmp_path / "dot.cu"
    cu.write_text(DOT_CU)
    page = tmp_path / "dot.html"
    assert main(["run", str(cu), "--grid", "1", "--block", "3", "--arg", "a=1,2,3",
                 "--arg", "b=4,5,6", "--arg", "out=zeros:1", "--arg", "n=3", "--engine",
                 "model", "--check", "--html", str(page)]) == 0
    assert "[32]" in capsys.readouterr().out
    text = page.read_text()
    data = json.loads(re.search(r'id="qgpu-data">(.*?)</script>', text, re.S).group(1))
    assert data["engine"] == "model-check" and data["expected"] == data["tokens"]
    assert len(data["margins"]) == len(data["tokens"]) == 26 and data["mismatch"] is None
    if browser.chromium() is None:
        pytest.skip("chromium is not installed (./dev test installs it)")
    dom = browser.parse(browser.dump_dom(page, "step=2"))
    bars = dom.by_id("strip").find_all("span", cls="mt")
    assert len(bars) == 26 and all("ok" in b.classes for b in bars)
    assert dom.by_id("check").attrs["data-ok"] == "true"
    assert float(dom.by_id("margin-min").attrs["data-min"]) == min(data["margins"])
    selected = [int(b.attrs["data-i"]) for b in bars if "sel" in b.classes]
    step = data["steps"][1]
    assert selected == list(range(step["pos"], step["end"]))
