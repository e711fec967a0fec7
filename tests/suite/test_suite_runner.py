"""qgpu.suite's runner: run_case through the launch API, the per-launch table (a wrong
oracle or a refused kernel shows up), and `python -m qgpu.suite`."""

import numpy as np

from qgpu.suite import load_kernel, main, run_case, suite_table

SOURCE = "__global__ void twice(const int* a, int* b) { b[threadIdx.x] = 2 * a[threadIdx.x]; }"


def _kernel(tmp_path, oracle_expr, source=SOURCE):
    (tmp_path / "twice.cu").write_text(source)
    (tmp_path / "twice.py").write_text(
        "import numpy as np\nKERNEL = 'twice'\n"
        "LAUNCHES = [{'grid': 1, 'block': 3, 'args': {'a': np.array([1, -2, 3], np.int32), "
        "'b': np.zeros(3, np.int32)}}]\n"
        f"def oracle(args, grid, block): return {{'a': args['a'], 'b': {oracle_expr}}}\n")
    return load_kernel(tmp_path / "twice.py")


def test_run_case_copies_arrays_back_and_leaves_the_spec_alone(tmp_path):
    spec = _kernel(tmp_path, "2 * args['a']")
    outputs, expected, tokens = run_case(spec, spec.launches[0])
    assert outputs["b"].tolist() == [2, -4, 6] == expected["b"].tolist()
    assert spec.launches[0]["args"]["b"].tolist() == [0, 0, 0]
    assert tokens is None or tokens > 0


def test_table_flags_a_wrong_oracle_and_a_refused_kernel(tmp_path):
    wrong = _kernel(tmp_path, "3 * args['a']")
    assert [r["ok"] for r in suite_table([wrong])] == [False]
    (tmp_path / "float").mkdir()
    refused = _kernel(tmp_path / "float", "args['a']",       # no double on qgpu
                      source=SOURCE.replace("2 * a[threadIdx.x]", "(int)(a[threadIdx.x] * 1.5)"))
    row = suite_table([refused])[0]
    assert not row["ok"] and row["error"]


MIXED = """__global__ void mixed(const float *x, float *y, const unsigned char *m, bool *pos,
                      short *s, float a) {
  int i = threadIdx.x;
  y[i] = m[i] ? a * x[i] : -x[i];
  pos[i] = x[i] > 0.0f;
  s[i] = (short)(m[i] * 300);
}
"""
MIXED_SPEC = """import numpy as np
KERNEL = 'mixed'
X = np.array([1.5, -2.0, np.nan, 3e38, -0.0], np.float32)
X[2] = np.uint32(0x7fc00001).view(np.float32)      # a NaN with a payload, negated below
LAUNCHES = [{'grid': 1, 'block': 5, 'args': {
    'x': X, 'y': np.zeros(5, np.float32), 'm': np.array([1, 200, 0, 7, 0], np.uint8),
    'pos': np.zeros(5, bool), 's': np.zeros(5, np.int16), 'a': 0.5}}]
def oracle(args, grid, block):
    x, m = args['x'], args['m']
    y = np.where(m != 0, np.float32(args['a']) * x, -x).astype(np.float32)
    return {'x': x, 'y': y, 'm': m, 'pos': x > 0, 's': m.astype(np.int64) * 300}
"""


def test_suite_takes_float_byte_bool_and_short_arrays(tmp_path):
    (tmp_path / "mixed.cu").write_text(MIXED)
    (tmp_path / "mixed.py").write_text(MIXED_SPEC)
    spec = load_kernel(tmp_path / "mixed.py")
    outputs, expected, _tokens = run_case(spec, spec.launches[0])
    assert outputs["y"].dtype == np.float32 and outputs["pos"].dtype == bool
    assert outputs["y"].view(np.uint32)[2] == 0xFFC00001          # -NaN keeps its payload
    assert expected["s"].tolist() == [300, 60000 - 65536, 0, 2100, 0]   # wrapped to int16
    assert [r["ok"] for r in suite_table([spec])] == [True]
    # a float64 oracle output is refused rather than rounded silently
    (tmp_path / "mixed.py").write_text(MIXED_SPEC.replace(".astype(np.float32)",
                                                          ".astype(np.float64)"))
    row = suite_table([load_kernel(tmp_path / "mixed.py")])[0]
    assert not row["ok"] and "float32" in row["error"]


def test_module_main_runs_named_kernels(capsys):
    assert main(["dot"]) == 0
    out = capsys.readouterr().out
    assert "dot[0:g1b3]" in out and "3/3 launches equal to the oracle" in out
    assert np.all(["ok" in line for line in out.splitlines()[:3]])


def test_module_main_names_an_unknown_kernel(capsys):
    assert main(["no_such_kernel"]) == 2
    assert "no suite kernel 'no_such_kernel'" in capsys.readouterr().err
