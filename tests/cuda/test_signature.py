"""cuda.signature: kernels, their C++ names and parameter types from clang's AST."""

import pytest

from qgpu.cuda.signature import find_kernel, parse_kernels
from qgpu.errors import CompileError


def test_qualifiers_typedefs_defaults_and_unnamed_parameters():
    src = """// a comment with __global__ void fake(float x)
typedef unsigned int uint;
#define T int
extern "C" __global__ void __launch_bounds__(16) foo(const T* __restrict__ a,
    uint n, uint32_t b[], int, volatile signed c = 3) {}
__global__ void bar(int *a);
__global__ void bar(int *a) { }
"""
    foo, bar = parse_kernels(src)
    assert foo.name == "foo" and foo.line == 4 and foo.max_threads == 16
    assert [(p.name, p.ctype, p.pointer, p.const) for p in foo.params] == [
        ("a", "int", True, True), ("n", "unsigned int", False, False),
        ("b", "unsigned int", True, False), ("arg3", "int", False, False),
        ("c", "int", False, False)]
    assert str(foo.params[0]) == "const int *a"
    assert bar.name == "bar" and len(bar.params) == 1 and foo.problem is None


def test_element_types_of_pointers():
    src = """struct P { int a, b; };
__global__ void k(char *a, unsigned char *b, bool *c, short *d, unsigned short *e,
                  P *f, int4 *g, const void *h) {}"""
    (k,) = parse_kernels(src)
    assert [(p.ctype, p.dtype) for p in k.params] == [
        ("char", "int8"), ("unsigned char", "uint8"), ("bool", "bool"), ("short", "int16"),
        ("unsigned short", "uint16"), ("struct P", None), ("struct int4", None),
        ("void", None)]
    assert k.problem is None


def test_void_and_empty_parameter_lists():
    assert parse_kernels("__global__ void k(void) {}")[0].params == ()
    assert parse_kernels("__global__ void k() {}")[0].params == ()


@pytest.mark.parametrize("decl,match", [
    ("int &r", "reference"), ("int **p", "pointer to a pointer"),
    ("double d", "64 bits on a GPU"), ("long n", "64 bits on a GPU"), ("size_t n", "64 bits"),
    ("unsigned long *p", "use long long / int64_t"), ("int2 v", "not struct int2")])
def test_unsupported_parameters_name_the_kernel_and_line(decl, match):
    (k,) = parse_kernels(f"\n__global__ void k({decl}) {{}}", "f.cu")
    assert k.problem.startswith("f.cu:2: kernel k: ") and match in k.problem


def test_64_bit_long_in_the_body_is_refused_with_its_line():
    src = ("__device__ int f(int x) {\n  size_t s = x;\n  return s * 2; }\n"
           "__global__ void k(int *a) { a[0] = f(a[1]); }\n"
           "__global__ void ok(int *a) { a[0] = sizeof(int) * 2; }\n")
    k, ok = parse_kernels(src, "f.cu")
    assert k.problem.startswith("f.cu:2: kernel k: 'size_t' is 64 bits")
    assert ok.problem is None


def test_namespaces_overloads_and_templates():
    src = """namespace a { __global__ void k(int *x) {} }
namespace b { __global__ void k(int *x) {} }
__global__ void o(int *x) {}
__global__ void o(unsigned *x) {}
template <class T> __global__ void r(T *x) {}
template __global__ void r<int>(int *);
"""
    ks = parse_kernels(src, "f.cu")
    assert [k.name for k in ks] == ["a::k", "b::k", "o", "o", "r<int>"]
    assert find_kernel(ks, "a::k", "f.cu").mangled == "_ZN1a1kEPi"
    assert find_kernel(ks, "o(unsigned *)", "f.cu").mangled == "_Z1oPj"
    assert find_kernel(ks, "r<int>", "f.cu").name == "r<int>"
    assert find_kernel(ks, "r", "f.cu").name == "r<int>"
    for ambiguous in ("k", "o"):
        with pytest.raises(CompileError, match="names 2 kernels"):
            find_kernel(ks, ambiguous, "f.cu")
    with pytest.raises(CompileError, match="no __global__ function named 'zz'"):
        find_kernel(ks, "zz", "f.cu")
