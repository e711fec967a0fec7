"""Issue 36's argument, API and CLI rows: --symbol and set_symbol by the variable's type,
float arguments nan/inf/overflow, JSON without NaN, big-endian arrays, sizes beyond global
memory, printf fields and buffer advice, launch dimensions, API misuse, include folders,
the trace page's data and an unusable cache folder. Each the right result where the
input is legal, else one line naming what is wrong."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import qgpu
from qgpu.cli import main
from qgpu.cuda import launch_many
from qgpu.cuda.printf import PrintfOverflow, PrintfOverwritten
from qgpu.errors import CompileError, LaunchError, MachineError
from qgpu.isa import limits

from .test_rows import one_error

TABLES = ("__constant__ int tab[4];\n__constant__ float ftab[4];\n"
          "__constant__ unsigned char ctab[4];\n"
          "__global__ void k(int *o, float *f) { o[threadIdx.x] = tab[threadIdx.x] + "
          "ctab[threadIdx.x]; f[threadIdx.x] = ftab[threadIdx.x]; }\n")
SCALE = ("__global__ void k(const float *a, float s, float *o) "
         "{ o[threadIdx.x] = a[threadIdx.x] * s; }\n")
COPY = "__global__ void k(const int *a, int *o) { o[threadIdx.x] = a[threadIdx.x] + 1; }\n"
LOOP_PRINTF = ("#include <cstdio>\n__global__ void k(int *o, int n) {\n"
               "  for (int i = 0; i < n; i++) printf(\"%d %d\\n\", threadIdx.x, i);\n}\n")
HELLO = "#include <cstdio>\n__global__ void k(int *o) { printf(\"hello %d\\n\", threadIdx.x); }\n"
RUN = ["--grid", "1", "--block", "4", "--engine", "interp"]


def strict_json(text: str):
    """json.loads refusing NaN / Infinity (as JavaScript's JSON.parse does)."""
    def refuse(name):
        raise ValueError(f"{name} is not JSON")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def cu(tmp_path):
    def write(name: str, text: str) -> str:
        (tmp_path / name).write_text(text)
        return str(tmp_path / name)
    return write


# -- --symbol / set_symbol ---------------------------------------------------------------

@pytest.mark.parametrize("symbol, match", [
    ("tab=99999999999", "--symbol tab: 99999999999 does not fit int32 (int elements)"),
    ("tab=-2147483649", "does not fit int32"),
    ("ctab=256", "--symbol ctab: 256 does not fit uint8 (unsigned char elements)"),
    ("ftab=1e400", "--symbol ftab: 1e400 overflows float32"),
    ("ftab=1e39", "--symbol ftab: 1e39 overflows float32"),
    ("ftab=x", "--symbol ftab: 'x' is not a number (float elements)"),
    ("tab=1.5", "--symbol tab: '1.5' is not an integer"),
])
def test_symbol_values_are_checked_by_the_variables_type(capsys, cu, symbol, match):
    err = one_error(capsys, "run", ["run", cu("t.cu", TABLES), *RUN, "--arg", "o=zeros:4",
                                    "--arg", "f=zeros:4", "--symbol", symbol])
    assert match in err


def test_symbol_takes_floats_for_a_float_table(capsys, cu):
    assert main(["run", cu("t.cu", TABLES), *RUN, "--arg", "o=zeros:4", "--arg", "f=zeros:4",
                 "--symbol", "tab=2147483392,-1,0x10,0", "--symbol", "ctab=255,0,1,2",
                 "--symbol", "ftab=1.5,-2,inf,nan", "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["args"]["o"] == [2147483647, -1, 17, 2]
    assert out["args"]["f"] == [1.5, -2.0, "inf", "nan"]


def test_set_symbol_stores_a_float_list_as_float32():
    mod = qgpu.compile(TABLES)
    mod.set_symbol("ftab", [1.5, 2, float("-inf"), 3.25])
    o, f = np.zeros(4, np.int32), np.zeros(4, np.float32)
    mod.get_function("k")(1, 4, (o, f), engine="interp")
    assert f.tolist() == [1.5, 2.0, -math.inf, 3.25]


@pytest.mark.parametrize("name, values, match", [
    ("tab", [99999999999], "tab: 99999999999 does not fit int32"),
    ("tab", [1.5], "tab: values must be integers"),
    ("ftab", [1e39], "ftab: 1e\\+39 overflows float32"),
    ("ftab", ["1"], "ftab: values must be numbers"),
    ("ftab", 3, "values must be a numpy array or a list of numbers, not int"),
])
def test_set_symbol_refuses_what_the_type_cannot_hold(name, values, match):
    with pytest.raises(LaunchError, match=match):
        qgpu.compile(TABLES).set_symbol(name, values)


def test_set_symbol_takes_a_big_endian_array_by_value():
    mod = qgpu.compile(TABLES)
    mod.set_symbol("tab", np.array([1, -2, 3, 4], ">i4"))
    mod.set_symbol("ftab", np.array([0.5, 1, 2, 4], ">f4"))
    o, f = np.zeros(4, np.int32), np.zeros(4, np.float32)
    mod.get_function("k")(1, 4, (o, f), engine="interp")
    assert o.tolist() == [1, -2, 3, 4] and f.tolist() == [0.5, 1, 2, 4]


# -- float arguments and JSON ------------------------------------------------------------

def test_nan_and_inf_arguments_run_and_json_has_no_nan(capsys, cu):
    assert main(["run", cu("s.cu", SCALE), *RUN, "--arg", "a=1,-inf,nan,2", "--arg", "s=inf",
                 "--arg", "o=zeros:4", "--json"]) == 0
    out = strict_json(capsys.readouterr().out)
    assert out["args"]["a"] == [1.0, "-inf", "nan", 2.0]
    assert out["args"]["o"] == ["inf", "-inf", "nan", "inf"]
    assert main(["run", cu("s.cu", SCALE), *RUN, "--arg", "a=1,2,3,4", "--arg", "s=nan",
                 "--arg", "o=zeros:4"]) == 0
    assert "s = nan" in capsys.readouterr().out


def test_several_launches_json_has_no_nan(capsys, cu):
    assert main(["run", cu("s.cu", SCALE), *RUN, "--arg", "a=1,2,3,4", "--arg", "s=nan",
                 "--arg", "s=-inf", "--arg", "o=zeros:4", "--json"]) == 0
    lines = [strict_json(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["args"]["o"] == ["nan"] * 4 and lines[1]["args"]["o"] == ["-inf"] * 4


@pytest.mark.parametrize("args, match", [
    (["a=1,2,3,4", "s=1e400"], "--arg s: 1e400 overflows float32"),
    (["a=1,1e39,3,4", "s=1"], "--arg a: 1e39 overflows float32"),
    (["a=1,2,3,4", "s=-1e400"], "--arg s: -1e400 overflows float32"),
])
def test_float_overflow_is_refused_before_the_launch(capsys, cu, args, match):
    argv = ["run", cu("s.cu", SCALE), *RUN, "--arg", "o=zeros:4"]
    for a in args:
        argv += ["--arg", a]
    assert match in one_error(capsys, "run", argv)


def test_api_float_scalars():
    k = qgpu.compile(SCALE).get_function("k")
    a, o = np.array([1, 2, 3, 4], np.float32), np.zeros(4, np.float32)
    res = k(1, 4, (a, float("nan"), o), engine="interp")
    assert np.isnan(o).all() and math.isnan(res.scalars["s"])
    assert k(1, 4, (a, 2.5, o), engine="interp").scalars["s"] == 2.5
    o[:] = 7
    with pytest.raises(LaunchError, match="argument s: 1e\\+39 overflows float32"):
        k(1, 4, (a, 1e39, o), engine="interp")
    assert (o == 7).all()       # refused before it ran


@pytest.mark.parametrize("dtype", [">i4", ">f4", ">u2", ">i8"])
def test_big_endian_arrays_are_placed_by_value(dtype):
    c_type = {"i4": "int", "f4": "float", "u2": "unsigned short", "i8": "long long"}[dtype[1:]]
    src = (f"__global__ void k(const {c_type} *a, {c_type} *o) "
           "{ o[threadIdx.x] = a[threadIdx.x] + a[threadIdx.x]; }\n")
    a = np.array([1, 2, 3, 300], dtype)
    o = np.zeros(4, dtype)
    qgpu.compile(src).get_function("k")(1, 4, (a, o), engine="interp")
    assert o.dtype == np.dtype(dtype) and o.tolist() == [2, 4, 6, 600]


# -- sizes -------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["zeros:3000000000", "zeros:100000000000000",
                                   f"zeros:{limits.GLOBAL_WORDS + 1}",
                                   ",".join(["1"] * (limits.GLOBAL_WORDS + 1))])
def test_sizes_beyond_global_memory_are_refused_before_allocating(capsys, cu, value):
    err = one_error(capsys, "run", ["run", cu("c.cu", COPY), *RUN, "--arg", f"a={value}",
                                    "--arg", "o=zeros:4"])
    assert f"words of global memory; the machine has {limits.GLOBAL_WORDS}" in err
    assert "GLOBAL_WORDS" in err


def test_byte_elements_are_counted_in_bytes(capsys, cu):
    """4 bytes a word: 4 * GLOBAL_WORDS unsigned chars pass the count (the launch then
    counts the other array's words too); one more is refused before allocating."""
    path = cu("b.cu", "__global__ void k(const unsigned char *a, int *o) "
                      "{ o[threadIdx.x] = a[threadIdx.x]; }\n")
    err = one_error(capsys, "run", ["run", path, *RUN, "--arg",
                                    f"a=zeros:{4 * limits.GLOBAL_WORDS}", "--arg", "o=zeros:4"])
    assert f"the arrays need {limits.GLOBAL_WORDS + 4} words" in err
    err = one_error(capsys, "run", ["run", path, *RUN, "--arg",
                                    f"a=zeros:{4 * limits.GLOBAL_WORDS + 1}", "--arg",
                                    "o=zeros:4"])
    assert f"{4 * limits.GLOBAL_WORDS} such elements" in err


# -- printf ------------------------------------------------------------------------------

@pytest.mark.parametrize("conv", ["%2000000000d", "%.5000f", "%4097x"])
def test_printf_fields_are_bounded_at_compile(capsys, cu, conv):
    value = "1.0f" if conv.endswith("f") else "threadIdx.x"
    path = cu("p.cu", "#include <cstdio>\n__global__ void k(int *o) {\n"
                      f"  printf(\"{conv}\\n\", {value});\n}}\n")
    err = one_error(capsys, "run", ["run", path, *RUN, "--arg", "o=zeros:4"])
    assert "p.cu:3" in err and "above 4096 characters" in err


def test_printf_field_of_4096_prints(capsys, cu):
    path = cu("p.cu", "#include <cstdio>\n__global__ void k(int *o) {\n"
                      "  printf(\"%4096d|\\n\", 7);\n}\n")
    assert main(["run", path, "--grid", "1", "--block", "1", "--engine", "interp",
                 "--arg", "o=zeros:4"]) == 0
    assert " " * 4095 + "7|\n" in capsys.readouterr().out


def test_printf_overflow_advises_only_what_can_be_given(capsys, cu):
    path = cu("p.cu", LOOP_PRINTF)
    err = one_error(capsys, "run", ["run", path, *RUN, "--arg", "o=zeros:4", "--arg", "n=100"])
    assert "--printf-words" not in err and "print less" in err
    assert f"has {limits.GLOBAL_WORDS} words" in err
    err = one_error(capsys, "run", ["run", path, *RUN, "--arg", "o=zeros:4", "--arg", "n=10",
                                    "--printf-words", "20"])
    assert "give --printf-words 121" in err
    assert main(["run", path, *RUN, "--arg", "o=zeros:4", "--arg", "n=10",
                 "--printf-words", "121"]) == 0


def _run_then_overwrite(word: int, value: int):
    """HELLO on the interpreter, then one word of the printf buffer set to `value` (as a
    kernel's store past its array would on an engine without bounds), then finished."""
    k = qgpu.compile(HELLO).get_function("k")
    prep = k.prepare(1, 4, (np.zeros(4, np.int32),), engine="interp")
    run = prep.runner(prep.program, prep.grid, prep.block, prep.memory, prep.budget)
    run.memory[prep.buffer.first + word] = value
    return k.finish(prep, run, 0.0)


def test_an_overwritten_printf_counter_is_named():
    assert _run_then_overwrite(1, 1).printed == "hello 0\nhello 1\nhello 2\nhello 3\n"
    with pytest.raises(PrintfOverwritten, match="printf buffer was overwritten: its counter "
                                                "holds 1,094,795,590") as exc:
        _run_then_overwrite(0, 1_094_795_590)
    assert "--printf-words" not in str(exc.value)
    # a record's header overwritten: the host's guard of the buffer (qgpu.cuda.guard) names
    # it before the records are read
    with pytest.raises(MachineError, match="the printf buffer, outside its records"):
        _run_then_overwrite(3, 0x41414141)
    assert issubclass(PrintfOverwritten, PrintfOverflow)


# -- dimensions and API misuse -----------------------------------------------------------

def test_four_dimensions_are_named(capsys, cu):
    err = one_error(capsys, "run", ["run", cu("c.cu", COPY), "--grid", "1,1,1,1", "--block",
                                    "4", "--engine", "interp", "--arg", "a=1",
                                    "--arg", "o=zeros:4"])
    assert "4 dimensions; give at most 3" in err
    with pytest.raises(LaunchError, match="4 dimensions; a launch has 1 to 3"):
        qgpu.compile(COPY).get_function("k")((1, 1, 1, 1), 4, ())


@pytest.mark.parametrize("launches, match", [
    ([("k", 1, 4, ())], "launch 0's kernel is a str, not a kernel"),
    ([(None, 1, 4, ())], "launch 0's kernel is a NoneType"),
    ([("k", 1)], "launch 0 is not a \\(kernel, grid, block, args\\) tuple"),
    (5, "takes a list of \\(kernel, grid, block, args\\) tuples, not int"),
])
def test_launch_many_names_what_is_not_a_launch(launches, match):
    with pytest.raises(LaunchError, match=match):
        launch_many(launches)


@pytest.mark.parametrize("sets", [5, None, {"a": 1}])
def test_kernel_launch_many_takes_a_list_of_argument_sets(sets):
    with pytest.raises(LaunchError, match="launch_many takes a list of argument sets"):
        qgpu.compile(COPY).get_function("k").launch_many(1, 4, sets)


@pytest.mark.parametrize("name", [None, 3, b"k"])
def test_get_function_takes_a_name(name):
    with pytest.raises(LaunchError, match="get_function takes a kernel's name .*kernels: k"):
        qgpu.compile(COPY).get_function(name)


INCLUDING = '#include "two.h"\n__global__ void k(int *o) { o[threadIdx.x] = TWO; }\n'


@pytest.mark.parametrize("folders", ["inc", Path("inc"), ["inc"], (b"inc",)])
def test_include_dirs_one_folder_or_several_relative_to_the_cwd(tmp_path, monkeypatch,
                                                                folders):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "two.h").write_text("#define TWO 2\n")
    monkeypatch.chdir(tmp_path)
    o = np.zeros(4, np.int32)
    qgpu.compile(INCLUDING + f"// {folders!r}\n", include_dirs=folders).get_function("k")(
        1, 4, (o,), engine="interp")
    assert o.tolist() == [2] * 4


def test_include_dirs_none_is_no_folder():
    assert qgpu.compile(COPY + "// no folders\n", include_dirs=None).kernel_names == ["k"]


def test_include_dirs_of_another_type_is_named():
    with pytest.raises(CompileError, match="include_dirs must be a folder or a list"):
        qgpu.compile(INCLUDING, include_dirs=3)


def test_relative_include_flag_is_found(tmp_path, monkeypatch, capsys):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "two.h").write_text("#define TWO 2\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "k.cu").write_text(INCLUDING + "// relative -I\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "src/k.cu", "-I", "inc", *RUN, "--arg", "o=zeros:4", "--json"]) == 0
    assert strict_json(capsys.readouterr().out)["args"]["o"] == [2] * 4


# -- the trace page ----------------------------------------------------------------------

def _page_data(path: Path) -> dict:
    import re
    text = path.read_text()
    return strict_json(re.search(r'id="qgpu-data">(.*?)</script>', text, re.S).group(1))


def test_trace_page_with_nan_margins_is_valid_json(tmp_path, capsys):
    from qgpu.protocol import encode_prompt
    k = qgpu.compile(SCALE).get_function("k")
    res = k(1, 4, (np.ones(4, np.float32), 2.0, np.zeros(4, np.float32)), engine="interp")
    margins = [float("nan"), float("inf")] + [1.5] * (len(res.trace) - 2)
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"prompt": encode_prompt(res.program, 1, 4,
                                                         list(res.initial)),
                                 "trace": list(res.trace), "margins": margins}))
    page = tmp_path / "t.html"
    assert main(["trace", str(trace), "--html", str(page)]) == 0
    data = _page_data(page)
    assert data["margins"][:3] == [None, None, 1.5]


def test_run_page_with_a_nan_scalar_is_valid_json(tmp_path, capsys, cu):
    page = tmp_path / "r.html"
    assert main(["run", cu("s.cu", SCALE), *RUN, "--arg", "a=1,2,3,4", "--arg", "s=nan",
                 "--arg", "o=zeros:4", "--html", str(page)]) == 0
    data = _page_data(page)
    assert data["scalars"] == {"s": "nan"}


# -- an unusable cache folder ------------------------------------------------------------

def test_a_cache_folder_that_is_a_file_is_one_line(tmp_path):
    """The compile cache and the native kernel share the folder: one line, no Python
    warning (the kernel is built in a temporary folder instead)."""
    a_file = tmp_path / "cache"
    a_file.write_text("")
    code = ("from qgpu.circuit.compile import compile_circuit\n"
            "from qgpu.circuit.schedule import LayerShape\n"
            "from qgpu.examples.demos import adder_machine\n"
            "from qgpu.model import fast_native\n"
            "compile_circuit(adder_machine().circuit, LayerShape.small())\n"
            "print(fast_native.load_kernel() is not None)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "QGPU_CACHE_DIR": str(a_file)}, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("\n") == 1 and "Warning" not in r.stderr, r.stderr
    assert "cache folder cannot be used" in r.stderr and "is a file" in r.stderr
    assert a_file.read_text() == ""
