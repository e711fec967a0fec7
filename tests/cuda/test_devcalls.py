"""cuda.devcalls: printf and assert in kernels, lowered to records the machine writes into
the printf buffer, formatted by the host after the launch; asserts stop the launch with
the file:line and condition; what qgpu cannot print exactly is refused naming the line."""

import json
from pathlib import Path

import numpy as np
import pytest

import qgpu
from qgpu.cli import main as cli_main
from qgpu.cuda.printf import KernelAssertion, PrintfOverflow
from qgpu.errors import CompileError, LaunchError
from qgpu.isa import limits

CORPUS = Path(__file__).resolve().parents[2] / "kernels" / "corpus"
DEBUG = CORPUS / "printf_debug.cu"
IN = [3, 1, 4, 1, 5, 9, 2, 6]


def corpus(engine="interp"):
    return qgpu.compile(DEBUG.read_bytes(), str(DEBUG), engine=engine)


def prefix_text(values, block=4):
    lines = []
    for b in range(len(values) // block):
        part = values[b * block:(b + 1) * block]
        sums = np.cumsum(part)
        lines.append(f"block {b}: total {sums[-1]}\n")
        lines += [f"[{b},{t}] in={v:3d} out={s:<4d}|0x{s:04x}\n"
                  for t, (v, s) in enumerate(zip(part, sums, strict=True))]
    return "".join(lines)


def test_printf_debugging_prints_per_warp_in_order_and_the_kernel_still_computes():
    k = corpus().get_function("prefixDebug")
    x, out = np.array(IN, np.int32), np.zeros(8, np.int32)
    res = k(2, 4, [x, out, 8])
    assert res.printed == prefix_text(IN)
    assert list(out) == [3, 4, 8, 9, 5, 14, 16, 22]


def test_a_float_prints_as_c_prints_its_double():
    res = corpus().get_function("average")(1, 4, [np.array(IN, np.int32), 8])
    assert res.printed == f"mean {np.float32(sum(IN) / 8):.3f} of 8 values (int)\n"


def test_an_assert_stops_the_launch_naming_file_line_thread_and_condition():
    k = corpus().get_function("scaleChecked")
    x = np.array(IN, np.int32)
    k(1, 8, [x, 2, 20])                         # 2 * 9 <= 20: no assert
    assert list(x) == [2 * v for v in IN]
    with pytest.raises(KernelAssertion) as exc:
        k(1, 8, [np.array(IN, np.int32), 3, 20])   # 3 * 9 > 20 at thread 5
    assert str(exc.value) == (f"{DEBUG}:38: scaleChecked: block [0,0,0], thread [5,0,0]: "
                              "Assertion `v <= limit` failed.")


def test_assert_in_a_2d_launch_names_the_threads_coordinates_and_keeps_earlier_output():
    src = """#include <cstdio>
#include <cassert>
__global__ void k(int *a) {
  int i = threadIdx.y * blockDim.x + threadIdx.x;
  printf("(%d,%d)\\n", threadIdx.x, threadIdx.y);
  __syncthreads();
  assert(a[i] != 7);
}
"""
    k = qgpu.compile(src, "two.cu", engine="interp").get_function("k")
    with pytest.raises(KernelAssertion, match=r"two.cu:7: k: block \[0,0,0\], thread "
                                              r"\[1,1,0\]: Assertion `a\[i\] != 7` failed") as e:
        k(1, (2, 2), [np.array([0, 0, 0, 7], np.int32)])
    assert e.value.printed == "(0,0)\n(1,0)\n(0,1)\n(1,1)\n"


def test_a_full_buffer_is_an_error_naming_the_size_needed():
    k = corpus().get_function("prefixDebug")
    args = lambda: [np.array(IN, np.int32), np.zeros(8, np.int32), 8]  # noqa: E731
    with pytest.raises(PrintfOverflow, match=r"need 54 words .* --printf-words 55 \(the "
                                             r"API's printf_words=55\)") as exc:
        k(2, 4, args(), printf_words=20)
    assert prefix_text(IN).startswith(exc.value.printed) and exc.value.printed
    assert k(2, 4, args(), printf_words=55).printed == prefix_text(IN)


def test_the_buffer_is_reserved_from_the_arrays_and_strings_take_no_memory():
    src = """#include <cstdio>
__global__ void k(int *a, int *b) {
  b[threadIdx.x] = a[threadIdx.x] + 1;
  printf("a rather long format string that would take many words of memory: %d\\n", b[0]);
}
"""
    k = qgpu.compile(src, "r.cu", engine="interp").get_function("k")
    a, b = np.arange(60, dtype=np.int32), np.zeros(60, np.int32)
    assert k(1, 1, [a, b]).printed.endswith("memory: 1\n")       # 8 words left: 1 record
    # 120 words and a 10-word buffer do not fit the model machine's 128 words: the launch
    # is linked into the ISA's memory instead, where they do
    assert k(1, 1, [a, b], printf_words=10).program.memory_sizes == limits.ISA_MEMORY
    big = np.arange(8190, dtype=np.int32)
    with pytest.raises(LaunchError, match=r"the machine has 16384, 10 of them the printf "
                                          r"buffer \(printf_words, --printf-words\)"):
        k(1, 1, [big, big.copy()], printf_words=10)
    with pytest.raises(LaunchError, match="no global memory left for the printf buffer"):
        k(1, 1, [np.arange(8192, dtype=np.int32), np.zeros(8191, np.int32)])
    with pytest.raises(LaunchError, match=r"printf_words 1: give the printf buffer's size"):
        k(1, 1, [a, b], printf_words=1)


REFUSED = {
    "runtime_string": ('printf("%s", a[0] ? "x" : "y");', "prints string literals only"),
    "double": ('printf("%f", a[0] * 0.1);', "is 64-bit"),
    "long_long": ('printf("%lld", 1LL << 40);', "'%lld' prints a 64-bit value"),
    "star": ('printf("%*d", 3, a[0]);', r"\(\*\) is not supported"),
    "missing": ('printf("%d %d", a[0]);', "conversion '%d' has no argument"),
    "float_as_int": ('printf("%d", (float)a[0]);', "is given a float"),
    "local_array": ('int t[4]; for (int j = 0; j < 4; j++) t[j] = a[j]; a[0] = t[a[5] & 3];',
                    "local memory"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_qgpu_cannot_print_exactly_is_refused_with_kernel_and_line(name):
    body, match = REFUSED[name]
    src = f"#include <cstdio>\n__global__ void k(int *a) {{\n  {body}\n}}\n"
    with pytest.raises(CompileError, match=match) as exc:
        qgpu.compile(src, "bad.cu", engine="interp").get_function("k")
    assert "kernel k" in str(exc.value) and "bad.cu:3" in str(exc.value)


def test_cli_prints_the_device_output_first_and_json_carries_it(capsys):
    base = ["run", str(DEBUG), "--kernel", "prefixDebug", "--grid", "2", "--block", "4",
            "--arg", "in=" + ",".join(map(str, IN)), "--arg", "out=zeros:8", "--arg", "n=8",
            "--engine", "interp"]
    assert cli_main(base) == 0
    out = capsys.readouterr().out
    assert out.startswith(prefix_text(IN)) and "prefixDebug(const int *in" in out
    assert cli_main(base + ["--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["printf"] == prefix_text(IN) and doc["args"]["out"][-1] == 22
    assert cli_main(base + ["--printf-words", "20"]) == 1
    cap = capsys.readouterr()
    assert cap.out == prefix_text(IN)[:len(cap.out)] and cap.out
    assert "--printf-words 55" in cap.err


@pytest.mark.slow
def test_printf_and_assert_on_the_model_checked():
    """The model writes the records and the assert's TRAP itself; --check compares."""
    mod = corpus("model-check")
    out = np.zeros(8, np.int32)
    res = mod.get_function("prefixDebug")(2, 4, [np.array(IN, np.int32), out, 8])
    assert res.printed == prefix_text(IN) and out[-1] == 22
    with pytest.raises(KernelAssertion, match=r"printf_debug.cu:38: .*thread \[5,0,0\]"):
        mod.get_function("scaleChecked")(1, 8, [np.array(IN, np.int32), 3, 20])
