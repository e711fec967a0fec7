"""Every clear error of the front end: clang diagnostics with file:line, unsupported
constructs naming the PTX and source line, limits (ROM, shared memory), unknown kernels."""

import numpy as np
import pytest

import qgpu
from qgpu.cuda.driver import compile_to_ptx
from qgpu.errors import CompileError, ProgramError, QgpuError
from tests.cuda.helpers import run_ptx


def get(src, name="k", filename="kernel.cu"):
    return qgpu.compile(src, filename=filename, engine="interp").get_function(name)


def test_clang_error_names_the_users_file_and_line():
    src = "__global__ void k(int *a) {\n  a[0] = undefined_thing;\n}\n"
    with pytest.raises(CompileError) as e:
        get(src, filename="mykernel.cu")
    msg = str(e.value)
    assert msg.startswith("mykernel.cu:2:") and "undeclared identifier 'undefined_thing'" in msg
    assert "/tmp/" not in msg and "\n" not in msg
    assert "mykernel.cu:2" in e.value.diagnostics


def test_several_clang_errors_are_counted():
    src = "__global__ void k(int *a) { a[0] = x; a[1] = y; }"
    with pytest.raises(CompileError, match=r"\(and 1 more error\)"):
        get(src)


def test_doubles_are_rejected_naming_the_source_line():
    src = "__global__ void k(int *a) {\n  float f = a[0];\n  a[1] = (int)(f * 1.5);\n}\n"
    with pytest.raises(CompileError, match="double") as e:
        get(src)
    assert "PTX line" in str(e.value) and "kernel.cu:3" in str(e.value)


def test_64_bit_arithmetic_beyond_cuda_wide_is_rejected():
    # products and shifts are exact on register pairs (cuda.wide); 64-bit division is not
    src = "__global__ void k(int *a) {\n  long long x = (long long)a[0] * a[1];\n" \
          "  a[2] = (int)(x / a[3]);\n}\n"
    with pytest.raises(CompileError, match="64-bit") as e:
        get(src)
    assert "kernel k (kernel.cu:1)" in str(e.value) and "(from kernel.cu:3)" in str(e.value)


def test_local_arrays_indexed_at_run_time_are_rejected():
    src = """__global__ void k(int *a) {
      int tmp[8];
      for (int i = 0; i < 8; i++) tmp[i] = a[i] * i;
      a[0] = tmp[a[9] & 7];
    }"""
    with pytest.raises(CompileError, match="local memory"):
        get(src)


def test_rom_overflow_names_the_kernel_and_the_count():
    body = "".join(f"  if (a[{k}] > {k}) a[{k + 20}] = a[{k}] / a[{k + 40}];\n"
                   for k in range(130))
    src = f"__global__ void big(int *a) {{\n{body}}}\n"
    with pytest.raises(CompileError, match=r"kernel big \(kernel.cu:1\): needs \d+ machine "
                                           r"blocks; the program ROM holds 1024"):
        get(src, "big")


def test_a_program_past_the_model_rom_runs_on_the_interpreter_only():
    """321 blocks: within the ISA's ROM, past the model machine's 128 (refused by name)."""
    import qgpu.runtime  # noqa: F401  (registers the model's engines)
    body = "".join(f"  if (a[{k}] > {k}) a[{k + 20}] = a[{k}] / a[{k + 40}];\n"
                   for k in range(40))
    kernel = get(f"__global__ void big(int *a) {{\n{body}}}\n", "big")
    assert 128 < len(kernel.program.blocks) <= 1024
    a = np.arange(1, 81, dtype=np.int32)
    want = a.copy()
    for k in range(40):
        if want[k] > k:
            want[k + 20] = int(want[k] / want[k + 40])
    kernel(1, 1, [a])
    assert list(a) == list(want)
    with pytest.raises(ProgramError, match=r"blocks; the model machine's ROM holds 128"):
        kernel(1, 1, [np.arange(1, 81, dtype=np.int32)], engine="model")


def test_shared_memory_overflow():
    src = "__global__ void k(int *a) { __shared__ int s[12289]; s[threadIdx.x] = 1;" \
          " __syncthreads(); a[0] = s[a[1]]; }"
    with pytest.raises(CompileError,
                       match=r"kernel k \(kernel.cu:1\): __shared__ data needs 49156 bytes"):
        get(src)


def test_unsupported_parameter_types():
    with pytest.raises(CompileError, match=r"kernel.cu:1: kernel k: parameter 'double x'"):
        get("__global__ void k(int *a, double x) { a[0] = 1; }")
    with pytest.raises(CompileError, match="kernel.cu:1: kernel k: .* pointer to a pointer"):
        get("__global__ void k(int **a) { a[0][0] = 1; }")
    with pytest.raises(CompileError, match=r"kernel.cu:1: kernel k: .* not struct S \(pass "
                                           r"a pointer to it\)"):
        get("struct S { int v; };\n__global__ void k(S a) { }".replace("\n", " "))


def test_16_bit_atomics_are_rejected_clearly():
    body = """  .reg .b16 %rs<3>;
  .reg .b32 %r<2>;
  ld.param.u32 %r1, [k_param_0];
  mov.u16 %rs1, 1;
  atom.global.cas.b16 %rs2, [%r1], %rs1, %rs1;
  ret;"""
    with pytest.raises(CompileError, match="8/16-bit atomics"):
        run_ptx(body)


def test_calls_that_are_not_inlined_are_rejected():
    src = """__device__ __noinline__ int f(int x) { return x * 3 + 1; }
    __global__ void k(int *a) { a[0] = f(a[1]); }"""
    with pytest.raises(CompileError, match="not inline"):
        get(src)


def test_unknown_kernel_lists_the_kernels():
    src = "__global__ void one(int *a) { a[0] = 1; }\n__global__ void two(int *a) { a[0]=2; }"
    with pytest.raises(CompileError, match="no __global__ function named 'three' "
                                           r"\(kernels: one, two\)"):
        get(src, "three")


def test_errors_are_qgpu_errors():
    assert issubclass(CompileError, QgpuError)


def test_ptx_is_cached_per_source():
    src = "__global__ void k(int *a) { a[0] = 7; }"
    assert compile_to_ptx(src) is compile_to_ptx(src)
