"""cuda.signature: parameter names and types from __global__ headers."""

import pytest

from qgpu.cuda.signature import parse_kernels, ptx_base_name
from qgpu.errors import CompileError


def test_qualifiers_arrays_and_unnamed_parameters():
    src = """// a comment with __global__ void fake(float x)
#define N 4
extern "C" __global__ void __launch_bounds__(16) foo(const int* __restrict__ a,
    unsigned int n, uint32_t b[], int, volatile signed c) {}
__global__ void bar(int *a);
__global__ void bar(int *a) { }
"""
    foo, bar = parse_kernels(src)
    assert foo.name == "foo" and foo.line == 3
    assert [(p.name, p.ctype, p.pointer, p.const) for p in foo.params] == [
        ("a", "int", True, True), ("n", "unsigned", False, False),
        ("b", "unsigned", True, False), ("arg3", "int", False, False),
        ("c", "int", False, False)]
    assert str(foo.params[0]) == "const int *a"
    assert bar.name == "bar" and len(bar.params) == 1


def test_void_and_empty_parameter_lists():
    assert parse_kernels("__global__ void k(void) {}")[0].params == ()
    assert parse_kernels("__global__ void k() {}")[0].params == ()


@pytest.mark.parametrize("decl,match", [
    ("float x", "not 'float'"), ("int &r", "reference"), ("int **p", "pointers to pointers"),
    ("short s", "not 'short'")])
def test_unsupported_parameters(decl, match):
    with pytest.raises(CompileError, match=match):
        parse_kernels(f"\n__global__ void k({decl}) {{}}", "f.cu")


def test_templates_are_rejected():
    with pytest.raises(CompileError, match="template"):
        parse_kernels("template <int N> __global__ void k(int *a) {}")


@pytest.mark.parametrize("mangled,name", [("_Z4vaddPKiS0_Pii", "vadd"), ("_Z1kv", "k"),
                                          ("_ZN2ns3dotEPi", "dot"), ("plain", "plain")])
def test_ptx_names(mangled, name):
    assert ptx_base_name(mangled) == name
