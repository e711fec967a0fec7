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


def test_module_main_runs_named_kernels(capsys):
    assert main(["dot"]) == 0
    out = capsys.readouterr().out
    assert "dot[0:g1b3]" in out and "3/3 launches equal to the oracle" in out
    assert np.all(["ok" in line for line in out.splitlines()[:3]])


def test_module_main_names_an_unknown_kernel(capsys):
    assert main(["no_such_kernel"]) == 2
    assert "no suite kernel 'no_such_kernel'" in capsys.readouterr().err
