"""The suite's specs without running any kernel: size and coverage, launch rules, oracle
shapes, and the loader's errors on broken specs."""

import numpy as np
import pytest

from qgpu.cuda.shape import launch_shape
from qgpu.isa.limits import fits_model, launch_warps
from qgpu.suite import (
    SuiteError,
    c_div,
    c_rem,
    kernel_params,
    load_kernel,
    load_suite,
    wrap_to_dtype,
)

SUITE = load_suite()


def test_suite_has_at_least_64_kernels_with_unique_entry_names():
    assert len(SUITE) >= 64
    assert len({s.kernel for s in SUITE}) == len(SUITE)


def test_suite_covers_every_instruction_family():
    text = "\n".join(s.source for s in SUITE)
    for needle in ["__syncthreads", "__shared__", "__shfl_sync", "__shfl_up_sync",
                   "__shfl_down_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync",
                   "__all_sync", "__popc", "__clz", "__brev", "atomicAdd", "atomicSub",
                   "atomicMin", "atomicMax", "atomicAnd", "atomicOr", "atomicXor",
                   "atomicExch", "atomicCAS", "gridDim.x", "blockDim.x", "blockIdx.x",
                   "switch", "while", "return;", "break;", "continue;", " / ", " % ",
                   "unsigned", "uint32_t", "int32_t", "min(", "max(", "abs("]:
        assert needle in text, needle


def test_suite_covers_launch_shapes():
    launches = [launch_shape(l["grid"], l["block"]) for s in SUITE for l in s.launches]
    shapes = {(s.ctas, s.threads) for s in launches}
    assert any(b % 4 for _, b in shapes), "no partial warp"
    assert any(g == 1 and b > 4 for g, b in shapes), "no CTA with several warps"
    assert any(g == 4 for g, _ in shapes), "no 4-CTA grid"
    assert max(launch_warps(g, b) for g, b in shapes if fits_model(g, b)) == 4
    # the sizes tutorials launch (interpreter only until the model machine holds them)
    assert any(b == 256 for _, b in shapes) and any(g * b >= 1024 for g, b in shapes)
    assert any(not s.linear for s in launches if s.threads == 256), "no 2-D 16x16 block"


def test_shuffles_mean_the_same_on_a_partial_32_lane_warp():
    # Suite CTAs have at most 16 threads: one partial 32-lane warp on a GPU and on qgpu.
    # A shuffle then means the same on both when its width is 4 (the kernels written for
    # groups of 4 lanes) or its mask names the warp's members (a variable, not the full
    # 0xffffffff: the kernels written for 32 lanes), a value from an absent lane unused.
    import re

    for spec in SUITE:
        for call in re.findall(r"__shfl\w*_sync\(((?:[^()]|\([^()]*\))*)\)", spec.source):
            args = call.replace(" ", "")
            assert args.endswith(",4") or not args.startswith("0x"), (spec.name, call)


@pytest.mark.parametrize("spec", SUITE, ids=[s.name for s in SUITE])
def test_oracle_is_deterministic_and_leaves_inputs_alone(spec):
    for launch in spec.launches:
        before = {k: (v.copy() if isinstance(v, np.ndarray) else v)
                  for k, v in launch["args"].items()}
        first = spec.oracle(launch)
        second = spec.oracle(launch)
        for name, value in first.items():
            assert value.dtype == launch["args"][name].dtype
            assert np.array_equal(value, second[name])
        for name, value in before.items():
            assert np.array_equal(launch["args"][name], value)


def test_the_demo_dot_product_is_32():
    dot = next(s for s in SUITE if s.name == "dot")
    assert dot.kernel == "dot"
    assert [p.name for p in dot.params] == ["a", "b", "out", "n"]
    assert int(dot.oracle(dot.launches[0])["out"][0]) == 32


def test_kernel_params_reads_types_and_pointers():
    src = "__global__ void k(const unsigned* a, int n, uint32_t m,\n int *out) { }"
    params = kernel_params(src, "k")
    assert [(p.name, p.pointer, p.unsigned) for p in params] == [
        ("a", True, True), ("n", False, False), ("m", False, True), ("out", True, False)]
    with pytest.raises(SuiteError, match="no `__global__ void other"):
        kernel_params(src, "other")


def test_c_division_truncates_toward_zero():
    assert [c_div(7, 2), c_div(-7, 2), c_div(7, -2), c_div(-7, -2)] == [3, -3, -3, 3]
    assert [c_rem(7, 2), c_rem(-7, 2), c_rem(7, -2), c_rem(-7, -2)] == [1, -1, 1, -1]


def test_wrap_to_dtype_wraps_like_c():
    assert wrap_to_dtype([2**31, -1, 2**32 + 5], np.dtype(np.int32)).tolist() == [
        -2**31, -1, 5]
    assert wrap_to_dtype([-1, 2**40 + 3], np.dtype(np.uint32)).tolist() == [2**32 - 1, 3]


def _write_kernel(tmp_path, spec_text, source="__global__ void k(int* out) {}"):
    (tmp_path / "k.cu").write_text(source)
    (tmp_path / "k.py").write_text("import numpy as np\n" + spec_text)
    return tmp_path / "k.py"


def test_loader_rejects_launches_over_the_machine_limits(tmp_path):
    path = _write_kernel(tmp_path, 'KERNEL = "k"\nLAUNCHES = [{"grid": 2, "block": 1025, '
                         '"args": {"out": np.zeros(4, np.int32)}}]\n'
                         "def oracle(args, grid, block): return args\n")
    with pytest.raises(SuiteError, match="block of 1025 threads"):
        load_kernel(path)


def test_loader_rejects_args_that_do_not_match_the_signature(tmp_path):
    path = _write_kernel(tmp_path, 'KERNEL = "k"\nLAUNCHES = [{"grid": 1, "block": 4, '
                         '"args": {"o": np.zeros(4, np.int32)}}]\n'
                         "def oracle(args, grid, block): return args\n")
    with pytest.raises(SuiteError, match="!= parameters"):
        load_kernel(path)


def test_loader_rejects_wrong_array_dtypes(tmp_path):
    path = _write_kernel(tmp_path, 'KERNEL = "k"\nLAUNCHES = [{"grid": 1, "block": 4, '
                         '"args": {"out": np.zeros(4, np.int64)}}]\n'
                         "def oracle(args, grid, block): return args\n")
    with pytest.raises(SuiteError, match="numpy array of int32/uint32/float32"):
        load_kernel(path)


def test_oracle_with_a_missing_output_is_an_error(tmp_path):
    path = _write_kernel(tmp_path, 'KERNEL = "k"\nLAUNCHES = [{"grid": 1, "block": 4, '
                         '"args": {"out": np.zeros(4, np.int32)}}]\n'
                         "def oracle(args, grid, block): return {}\n")
    spec = load_kernel(path)
    with pytest.raises(SuiteError, match="keyed by"):
        spec.oracle(spec.launches[0])


def test_a_source_without_a_spec_is_an_error(tmp_path):
    (tmp_path / "lonely.cu").write_text("__global__ void lonely() {}")
    with pytest.raises(SuiteError, match="without a spec"):
        load_suite(tmp_path)
