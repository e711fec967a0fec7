"""The launch viewer's page without a browser: one self-contained file (no network, no
external assets, its data safe inside <script>), `qgpu trace --html`, the notebook view,
the block origins the front end records, and `--check`'s mismatch drawn from both
traces."""

import json
import re

import numpy as np
import pytest

import qgpu
from qgpu.cli import main
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import encode_prompt, expected_trace, tok
from qgpu.suite import kernel_source
from qgpu.view import launch_data, render_html, result_data
from tests.asm_programs import ADD_100

DOT_CU = kernel_source("dot")   # the demo kernel, kernels/dot.cu

TRICKY = DOT_CU.replace("{\n", "{  // </script><script>alert(1)</script> <!-- \n", 1)


def _dot(source=DOT_CU):
    k = qgpu.compile(source, filename="dot.cu", engine="interp").get_function("dot")
    out = np.zeros(1, np.int32)
    res = k(1, 3, (np.array([1, 2, 3], np.int32), np.array([4, 5, 6], np.int32), out, 3))
    assert int(out[0]) == 32
    return res


def _data_of(page: str) -> dict:
    blob = re.search(r'<script type="application/json" id="qgpu-data">(.*?)</script>', page,
                     re.S).group(1)
    return json.loads(blob)


def test_page_is_self_contained_and_its_data_round_trips():
    res = _dot(TRICKY)
    page = render_html(result_data(res))
    assert "{{" not in page and "/*{{" not in page
    assert not re.search(r"<(link|img|iframe|object|embed)\b", page, re.I)
    assert not re.search(r"\b(src|href)\s*=", page, re.I)
    assert not re.search(r"url\(|@import|https?://", page, re.I)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the source's: escaped
    data = _data_of(page)
    assert "</script>" in data["source"]["text"]
    assert data["tokens"] == res.trace and len(data["steps"]) == res.blocks_executed == 4
    assert data["memory"]["final"][6] == 32 and data["memory"]["initial"][:6] == [1, 2, 3, 4, 5, 6]
    assert data["arrays"][2] == {"name": "out", "base": 6, "size": 1, "signed": True}
    assert data["scalars"] == {"n": 3} and data["margins"] is None
    assert len(page.encode()) < 64_000


def test_block_origins_name_ptx_and_cuda_lines():
    res = _dot()
    origins = result_data(res)["origins"]
    assert len(origins) == len(res.program.blocks)
    ptx = res.sources["ptx"].splitlines()
    for o in origins:
        assert all(ptx[n - 1].strip() and not ptx[n - 1].strip().startswith(".loc")
                   for n in o["ptx"])
    assert origins[0]["source"] == [3] and origins[2]["source"] == [4]
    assert origins[3]["source"] == [4]        # atomicAdd, inlined from the header
    assert any("atom.global.add" in ptx[n - 1] for n in origins[3]["ptx"])


def test_notebook_view_is_an_iframe_of_the_page():
    res = _dot()
    out = res._repr_html_()
    assert out.startswith("<iframe srcdoc=") and "&lt;!DOCTYPE html&gt;" in out
    assert 'sandbox="allow-scripts"' in out




def test_trace_command_writes_a_page(tmp_path, capsys):
    prog = assemble(ADD_100)
    trace = expected_trace(run_launch(prog, 1, 3, [1, 2, 3]).events)
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"prompt": encode_prompt(prog, 1, 3, [1, 2, 3]), "trace": trace,
                             "engine": "interp"}))
    page = tmp_path / "t.html"
    assert main(["trace", str(f), "--html", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().err
    data = _data_of(page.read_text())
    assert data["engine"] == "interp" and [s["block"] for s in data["steps"]] == [0, 1]
    assert data["steps"][1]["writes"] == [[0, 101], [1, 102], [2, 103]]
    assert data["steps"][0]["regs"] == [[2, [0, 4, 8]], [3, [101, 102, 103]]]


def test_a_mismatch_is_drawn_from_both_traces():
    prog = assemble(ADD_100)
    memory = [1, 2, 3]
    prompt = encode_prompt(prog, 1, 3, memory)
    want = expected_trace(run_launch(prog, 1, 3, memory).events)
    # a written trace that decodes but holds another value: the steps are its own
    i = next(k for k, t in enumerate(want) if t == tok("V", 101))
    wrong = want[:i] + [tok("V", 7)] + want[i + 1:]
    data = launch_data(prompt, wrong, expected=want)
    assert data["mismatch"]["pos"] == i and data["decoded_from"] == "trace"
    assert data["mismatch"]["expected_name"] == "V(0x0065)"
    # a written trace that stops early does not decode: the interpreter's steps are shown
    data = launch_data(prompt, want[:3] + [tok("HALT")], expected=want)
    assert data["decoded_from"] == "expected" and data["mismatch"]["pos"] == 3
    assert "does not decode" in data["note"]
    with pytest.raises(qgpu.errors.ProtocolError):
        launch_data(prompt, want[:3] + [tok("HALT")])


PRINTS = """#include <cstdio>
__global__ void k(int *out) {
  int t = threadIdx.x;
  out[t] = t * t;
  printf("lane %d: %d </script>\\n", t, out[t]);
}
"""


def test_printf_output_is_on_the_page():
    """What the kernel printed (cuda.printf) goes into the page's data, safe inside its
    <script> (the text names </script>)."""
    k = qgpu.compile(PRINTS, filename="prints.cu", engine="interp").get_function("k")
    res = k(1, 3, (np.zeros(3, np.int32),))
    assert res.printed == "".join(f"lane {t}: {t * t} </script>\n" for t in range(3))
    page = render_html(result_data(res))
    assert page.count("</script>") == 2
    assert _data_of(page)["printed"] == res.printed
