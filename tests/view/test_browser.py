"""The launch viewer rendered by a real browser (headless Chromium): the timeline has one
cell per executed block, in order, with the right warp, block and active lanes; the
inspector shows a chosen step's tokens, registers and memory writes; the final memory
is the launch's result; a screenshot is drawn. `./dev test` installs Debian's chromium
when it is missing and the user is root; elsewhere these tests are skipped."""

from pathlib import Path

import numpy as np
import pytest

from qgpu import suite
from qgpu.cli import main
from qgpu.isa import limits
from tests.view import browser

pytestmark = pytest.mark.skipif(browser.chromium() is None,
                                reason="chromium is not installed (./dev test installs it)")


def _cells(dom):
    """The timeline's cells in step order (the DOM holds them row by row, per warp)."""
    cells = dom.by_id("timeline").find_all("div", cls="cell")
    return sorted(cells, key=lambda c: int(c.attrs["data-step"]))


def test_dot_demo_page(tmp_path, capsys):
    page = tmp_path / "dot.html"
    assert main(["demo", "--engine", "interp", "--html", str(page), "--quiet"]) == 0
    assert "result: 32" in capsys.readouterr().out
    dom = browser.parse(browser.dump_dom(page))
    cells = _cells(dom)
    # the dot demo: 4 executed blocks on one warp, then HALT (5 records)
    assert [(c.attrs["data-block"], c.attrs["data-mask"]) for c in cells] == \
        [("0", "012"), ("1", "012"), ("2", "012"), ("3", "012")]
    assert dom.by_id("nblocks").attrs["data-n"] == "4"
    assert "HALT after step 4" in dom.by_id("halt").text
    final = dom.by_id("final-arrays").find_all("tr", data_array="out")[0]
    assert final.text.strip().endswith("32")
    assert dom.by_id("replay-check").attrs["data-same"] == "true"
    # step 4: the atomicAdd writes word 6 (out[0]) = 32, marked in the picture
    dom = browser.parse(browser.dump_dom(page, "step=4"))
    assert dom.by_id("inspector").attrs["data-step"] == "4"
    assert [c.attrs["data-step"] for c in _cells(dom) if "cur" in c.classes] == ["4"]
    writes = dom.by_id("step-writes").find_all("tr")
    assert [(w.attrs["data-word"], w.find_all("td")[1].text) for w in writes] == [("6", "32")]
    word = dom.by_id("step-memory").find_all("div", cls="word", data_word="6")[0]
    assert "changed" in word.classes and word.attrs["data-value"] == "32"
    names = [t.text for t in dom.by_id("step-tokens").find_all("span", cls="tok")]
    assert names[0].startswith("EXEC(3,w0,012)") and names[-1].startswith("END")
    # the block's origins: the machine block and its CUDA line are highlighted
    assert dom.find_all("div", cls="mblock", data_block="3")[0].classes >= {"cur"}
    hl = [n.attrs["data-n"] for n in dom.by_id("cuda").find_all("div", cls="hl")]
    assert hl == ["4"]


def _divergent_launch():
    spec = next(s for s in suite.load_suite() if s.name == "divergent_if_else")
    launch = spec.launches[0]
    assert limits.launch_warps(launch["grid"], launch["block"]) == 4
    kernel = suite.compiled_module(spec.source).get_function(spec.kernel)
    values = suite.positional_args(spec, launch["args"])
    return kernel(launch["grid"], launch["block"], values), values, spec, launch


def test_four_warp_divergent_suite_launch(tmp_path):
    res, values, spec, launch = _divergent_launch()
    page = tmp_path / "div.html"
    page.write_text(res.html())
    dom = browser.parse(browser.dump_dom(page))
    rows = dom.by_id("timeline").find_all("div", cls="trow")
    assert [r.attrs["data-warp"] for r in rows] == ["0", "1", "2", "3"]
    cells = _cells(dom)
    assert len(cells) == res.blocks_executed == len(res.events)
    for c, ev in zip(cells, res.events, strict=True):
        assert (int(c.attrs["data-warp"]), int(c.attrs["data-block"]), c.attrs["data-mask"]) \
            == (ev.warp, ev.block, "".join(map(str, ev.active)))
        row = next(r for r in rows if r.attrs["data-warp"] == str(ev.warp))
        assert c in row.find_all("div", cls="cell")
    # a divergent step: fewer active lanes than the warp holds
    k = next(i for i, ev in enumerate(res.events) if len(ev.active) < limits.LANES and ev.writeback)
    ev = res.events[k]
    dom = browser.parse(browser.dump_dom(page, f"step={k + 1}"))
    assert dom.by_id("inspector").attrs["data-step"] == str(k + 1)
    regs = dom.by_id("step-regs")
    for reg, lanes in ev.writeback:
        row = regs.find_all("tr", data_reg=str(reg))[0]
        shown = {int(td.attrs["data-lane"]): int(td.text) for td in row.find_all("td")
                 if "data-lane" in td.attrs}
        assert shown == {ln: limits.s32(v) for ln, v in lanes.items()}
    # the final memory is the launch's result (and the oracle's)
    out = dict(zip([p.name for p in spec.params], values, strict=True))["out"]
    assert np.array_equal(out, spec.oracle(launch)["out"])
    row = dom.by_id("final-arrays").find_all("tr", data_array="out")[0]
    assert [int(x) for x in row.find_all("td", cls="values")[0].text.split()] == \
        [int(x) for x in out]


def test_screenshot_is_drawn(tmp_path):
    page = tmp_path / "dot.html"
    assert main(["demo", "--engine", "interp", "--html", str(page), "--quiet"]) == 0
    png = tmp_path / "dot.png"
    browser.screenshot(page, png, "step=2", size="1200,900")
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 1200 and len(data) > 20_000


def test_docs_screenshots_exist():
    docs = Path(__file__).resolve().parents[2] / "docs" / "viewer"
    for name in ("dot.png", "divergent.png"):
        data = (docs / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_check_mismatch_is_marked(tmp_path):
    """A written trace that differs from the interpreter's in one value token: the strip
    marks that token, the summary names both candidates."""
    from qgpu.interp import run_launch
    from qgpu.isa.asm import assemble
    from qgpu.protocol import encode_prompt, expected_trace, tok
    from qgpu.view import launch_data, write_html

    prog = assemble("block 0:\n  tid r1\n  shl r2, r1, 2\n  ld.global r3, [r2]\n"
                    "  add r3, r3, 100\n  jmp 1\nblock 1:\n  st.global [r2], r3\n  exit\n")
    prompt = encode_prompt(prog, 1, 3, [1, 2, 3])
    want = expected_trace(run_launch(prog, 1, 3, [1, 2, 3]).events)
    i = want.index(tok("V", 102))
    wrong = want[:i] + [tok("V", 7)] + want[i + 1:]
    page = tmp_path / "bad.html"
    write_html(page, launch_data(prompt, wrong, engine="model-check", expected=want))
    dom = browser.parse(browser.dump_dom(page))
    bars = dom.by_id("strip").find_all("span", cls="mt")
    assert [int(b.attrs["data-i"]) for b in bars if "bad" in b.classes] == [i]
    check = dom.by_id("check")
    assert check.attrs["data-ok"] == "false"
    assert f"token {i} differs" in check.text and "V(0x0066)" in check.text \
        and "V(0x0007)" in check.text


def test_barriers_and_releases_are_marked(tmp_path):
    """dot_shared over 4 warps: the cells of blocks that end at a barrier are marked, and
    each warp's first block after a release of its CTA's barrier."""
    spec = next(s for s in suite.load_suite() if s.name == "dot_shared")
    launch = next(c for c in spec.launches if (c["grid"], c["block"]) == (1, 16))
    kernel = suite.compiled_module(spec.source).get_function(spec.kernel)
    res = kernel(launch["grid"], launch["block"], suite.positional_args(spec, launch["args"]))
    page = tmp_path / "bar.html"
    page.write_text(res.html())
    cells = _cells(browser.parse(browser.dump_dom(page)))
    bars = {b for b, blk in enumerate(res.program.blocks) if type(blk.terminator).__name__ == "Bar"}
    assert bars and [("bar" in c.classes) for c in cells] == \
        [ev.block in bars for ev in res.events]
    epochs = [ev.epoch for ev in res.events]
    assert [("release" in c.classes) for c in cells] == \
        [k > 0 and epochs[k] != epochs[k - 1] for k in range(len(epochs))]
    assert sum("release" in c.classes for c in cells) >= 1


def test_keyboard_steps(tmp_path):
    """Right, left, End, Home, at both ends too: key presses dispatched to the page after it loads
    (a script appended to a copy of the page) move the selection."""
    page = tmp_path / "dot.html"
    assert main(["demo", "--engine", "interp", "--html", str(page), "--quiet"]) == 0
    html = page.read_text()
    seen = []
    for keys, want in ((["ArrowRight", "ArrowRight", "ArrowRight", "ArrowLeft"], "3"),
                       (["End", "ArrowRight"], "4"), (["End", "Home", "ArrowLeft"], "1")):
        press = "".join(f'document.dispatchEvent(new KeyboardEvent("keydown", {{key: "{k}"}}));'
                        for k in keys)
        copy = tmp_path / f"keys{len(seen)}.html"
        copy.write_text(html.replace("</body>", f"<script>{press}</script></body>"))
        dom = browser.parse(browser.dump_dom(copy))
        seen.append(dom.by_id("inspector").attrs["data-step"])
        assert seen[-1] == want, (keys, seen)
        assert [c.attrs["data-step"] for c in _cells(dom) if "cur" in c.classes] == [want]


def test_printf_output_is_drawn(tmp_path):
    """`qgpu run --html` of a kernel that prints: the page shows the printf text."""
    src = tmp_path / "prints.cu"
    src.write_text('#include <cstdio>\n__global__ void k(int *out) {\n  out[threadIdx.x] = 7;\n'
                   '  printf("lane %d says %d\\n", threadIdx.x, out[threadIdx.x]);\n}\n')
    page = tmp_path / "prints.html"
    assert main(["run", str(src), "--grid", "1", "--block", "2", "--engine", "interp",
                 "--arg", "out=zeros:2", "--html", str(page)]) == 0
    dom = browser.parse(browser.dump_dom(page))
    assert dom.by_id("printed").text == "lane 0 says 7\nlane 1 says 7\n"
