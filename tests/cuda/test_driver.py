"""cuda.driver: whole files compiled in place (includes beside them, -I), the shipped
headers, sources as bytes in any encoding, file names as the OS gives them, and clang's
own message when it fails or crashes."""

import os
import tempfile

import numpy as np
import pytest

import qgpu
from qgpu.cli import main as cli_main
from qgpu.errors import CompileError

KERNEL = b'#include "defs.cuh"\n__global__ void k(int *a) { a[threadIdx.x] = VALUE; }\n'


def _run(m, name="k"):
    a = np.zeros(2, np.int32)
    m.get_function(name)(1, 2, [a])
    return list(a)


def test_an_include_beside_the_source_resolves(tmp_path):
    (tmp_path / "defs.cuh").write_text("#define VALUE 7\n")
    src = tmp_path / "k.cu"
    src.write_bytes(KERNEL)
    assert _run(qgpu.compile(src.read_bytes(), str(src), engine="interp")) == [7, 7]
    # a string that is not the file's contents: compiled from a copy, the folder searched
    text = KERNEL.replace(b"VALUE", b"VALUE + 1")
    assert _run(qgpu.compile(text, str(src), engine="interp")) == [8, 8]


def test_include_dirs_and_the_missing_header_message(tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "defs.cuh").write_text("#define VALUE 3\n")
    with pytest.raises(CompileError, match=r"k.cu:1:10: fatal error: 'defs.cuh' file not found "
                                           r"\(qgpu parses host code against the system.s "
                                           r"C/C\+\+ headers.*cuda_runtime.h"):
        qgpu.compile(KERNEL, str(tmp_path / "k.cu"), engine="interp")
    m = qgpu.compile(KERNEL, str(tmp_path / "k.cu"), engine="interp", include_dirs=[str(inc)])
    assert _run(m) == [3, 3]


def test_host_code_and_shipped_headers():
    src = b"""#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <stdint.h>
#include <assert.h>
#include <iostream>
#include <vector>
#include "helper_cuda.h"
__global__ void k(int *a) { int2 v = make_int2(1, 2); uchar4 c = make_uchar4(1, 2, 3, 4);
  dim3 b = blockDim; a[threadIdx.x] = v.x + v.y + c.w + b.x + (int)sizeof(uint64_t); }
int main() { std::vector<int> h(2); int *d; checkCudaErrors(cudaMalloc(&d, 8));
  k<<<dim3(1), dim3(2)>>>(d); std::cout << h[0] << std::endl; printf("%d", h[1]); }
"""
    assert _run(qgpu.compile(src, "host.cu", engine="interp")) == [17, 17]


def test_sources_in_any_encoding_are_bytes_to_clang():
    latin1 = "// caf\xe9 \xb5\n__global__ void k(int *a) { a[threadIdx.x] = 5; }\n"
    assert _run(qgpu.compile(latin1.encode("latin-1"), "l.cu", engine="interp")) == [5, 5]
    utf16 = "__global__ void k(int *a) {}".encode("utf-16")
    with pytest.raises(CompileError, match="UTF-16"):
        qgpu.compile(utf16, "w.cu", engine="interp")


def test_a_file_name_that_is_not_utf8(tmp_path, capsys):
    name = tmp_path / os.fsdecode(b"k\xff.cu")
    name.write_bytes(b"__global__ void k(int *a) { a[threadIdx.x] += 1; }\n")
    rc = cli_main(["run", str(name), "--engine", "interp", "--grid", "1", "--block", "2",
                   "--arg", "a=1,2", "--json"])
    assert rc == 0 and '"a": [2, 3]' in capsys.readouterr().out


def test_a_clang_crash_shows_clangs_message_and_leaves_no_files():
    before = set(os.listdir(tempfile.gettempdir()))
    with pytest.raises(CompileError, match="clang crashed: .*Symbol name with unsupported "
                                           "characters.*non-ASCII"):
        qgpu.compile("__global__ void k\u00e9(int *a) { a[0] = 1; }", "u.cu", engine="interp")
    after = set(os.listdir(tempfile.gettempdir()))
    # clang's crash reproducers would be named after the compiled copy, src-*.cu / .sh
    assert not [f for f in after - before if f.startswith("src-")]


def test_unsupported_siblings_do_not_stop_a_kernel():
    src = """__global__ void f(float *x) { x[0] = 1.5f * x[1]; }
__global__ void p(int *a) { printf("%p", a); }
__global__ void k(int *a) { a[threadIdx.x] = 4; }
"""
    m = qgpu.compile("#include <stdio.h>\n" + src, "s.cu", engine="interp")
    assert _run(m) == [4, 4]
    with pytest.raises(CompileError, match=r"kernel p \(s.cu:3\): s.cu:3: printf conversion "
                                           "'%p' is not supported"):
        m.get_function("p")


def test_cli_lists_kernels(tmp_path, capsys):
    src = tmp_path / "two.cu"
    src.write_text("namespace a { __global__ void k(int *x) { x[0] = 1; } }\n"
                   "__global__ void k(long *x) {}\n")
    assert cli_main(["run", str(src), "--list"]) == 0
    out = capsys.readouterr().out
    assert "a::k(int *x)  [" in out and "runs" in out
    assert "cannot run: " in out and "two.cu:2: kernel k: parameter 'long *x' is 64 bits" in out


def test_scoped_atomics_are_the_plain_ones_on_one_device():
    src = """__global__ void k(int *a, unsigned *u) {
  __shared__ unsigned s;
  if (threadIdx.x == 0) s = 0;
  __syncthreads();
  atomicAdd_block(&s, 2u);
  atomicMax_system(a, (int)threadIdx.x * 3);
  atomicCAS_system(a + 1, 0, 9);
  __syncthreads();
  if (threadIdx.x == 0) u[0] = atomicInc_block(u + 1, 100u) + s;
}"""
    a, u = np.zeros(2, np.int32), np.array([0, 5], np.uint32)
    qgpu.compile(src, "atom.cu", engine="interp").get_function("k")(1, 4, [a, u])
    assert a.tolist() == [9, 9] and u.tolist() == [5 + 8, 6]


def test_nvcc_implicit_c_library_and_system_headers():
    """exit, rand, memset, clock, ceil, EXIT_FAILURE without an include (nvcc's headers
    declare them); C++ and POSIX headers from the system; device assert still traps."""
    src = b"""#include <algorithm>
#include <string>
#include <map>
#include <pthread.h>
#include <sys/utsname.h>
#include <cuda_profiler_api.h>
__global__ void k(int *a) { assert(threadIdx.x < 8); a[threadIdx.x] = 5 + (int)clock64(); }
int main() { int h[2]; memset(h, 0, sizeof h); srand(1); clock_t c = clock();
  std::map<std::string, int> m; m["x"] = std::max(rand(), (int)ceil(2.5));
  if (c < 0) exit(EXIT_FAILURE); cudaProfilerStart(); k<<<1, 2>>>(h); }
"""
    assert _run(qgpu.compile(src, "implicit.cu", engine="interp")) == [5, 5]


def test_split_launch_chevrons_are_joined_and_lines_kept(tmp_path):
    """`<< <grid, block>> >` is a launch; `>> >` closing nested templates is left alone,
    and a later error still names its own line."""
    (tmp_path / "defs.cuh").write_text("#define VALUE 4\n")
    src = b"""#include "defs.cuh"
template <class T> struct Box { T v; };
Box<Box<Box<int>> > nested;
__global__ void k(int *a) { a[threadIdx.x] = VALUE; }
int main() { int *d; cudaMalloc(&d, 8); k<< <1, 2>> >(d);
  k<< < dim3(1), dim3(2) >> >(d); }
"""
    path = tmp_path / "launch.cu"
    path.write_bytes(src)
    assert _run(qgpu.compile(src, str(path), engine="interp")) == [4, 4]
    bad = src + b"int broken = ;\n"
    with pytest.raises(CompileError, match=r"launch.cu:7:14: error: expected expression"):
        qgpu.compile(bad, str(path), engine="interp")


def test_kernel_errors_after_cpp_headers_name_the_users_line():
    """The AST is trimmed of the C++ library's declarations; locations stay exact."""
    src = b"""#include <iostream>
#include <vector>
#include <algorithm>

__global__ void fine(int *a) { a[threadIdx.x] = 1; }
__global__ void wide(long *a) { a[0] = 1; }
int main() { std::vector<int> v(3); std::sort(v.begin(), v.end()); std::cout << v[0]; }
"""
    m = qgpu.compile(src, "after_cpp.cu", engine="interp")
    assert _run(m, "fine") == [1, 1]
    with pytest.raises(CompileError, match=r"after_cpp.cu:6: kernel wide: parameter 'long \*a'"):
        m.get_function("wide")


def test_clock_is_zero_on_the_interpreter_and_clock_t_values_compile():
    src = b"""__global__ void timed(int *out) {
  clock_t start = clock();
  long long start64 = clock64();
  out[threadIdx.x] = (int)(clock() - start) + (int)(clock64() - start64) + 3;
}
"""
    assert _run(qgpu.compile(src, "timed.cu", engine="interp"), "timed") == [3, 3]


def test_cooperative_groups_thread_group_and_reduce():
    src = b"""#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
__device__ unsigned rank(const cg::thread_group &g) { return g.thread_rank() * 10 + g.size(); }
__global__ void k(const int *in, int *out) {
  cg::thread_block b = cg::this_thread_block();
  cg::thread_block_tile<2> pair = cg::tiled_partition<2>(b);
  int v = in[b.thread_rank()];
  int lo = cg::reduce(pair, v, cg::less<int>());
  int x = cg::reduce(pair, v, cg::bit_xor<int>());
  cg::thread_group g = pair;
  g.sync();
  cg::sync(b);
  out[b.thread_rank()] = lo * 10000 + x * 100 + rank(g) + rank(b) * 1000;
}
"""
    m = qgpu.compile(src, "cg.cu", engine="interp")
    x, out = np.array([5, 3, 9, 12], np.int32), np.zeros(4, np.int32)
    m.get_function("k")(1, 4, [x, out])
    lo = np.minimum(x, x.reshape(2, 2)[:, ::-1].reshape(-1))
    xor = np.bitwise_xor(x, x.reshape(2, 2)[:, ::-1].reshape(-1))
    ranks = np.arange(4) % 2 * 10 + 2 + (np.arange(4) * 10 + 4) * 1000
    assert list(out) == list(lo * 10000 + xor * 100 + ranks)


def test_cuda_samples_helpers_parse():
    """Host code in the CUDA samples' style: command-line flags, timers, device choice."""
    src = b"""#include <helper_functions.h>
#include <helper_cuda.h>
__global__ void k(int *a) { a[threadIdx.x] = 6; }
int main(int argc, char **argv) {
  int dev = findCudaDevice(argc, (const char **)argv);
  int n = checkCmdLineFlag(argc, (const char **)argv, "n")
              ? getCmdLineArgumentInt(argc, (const char **)argv, "n") : 2;
  StopWatchInterface *timer = NULL;
  sdkCreateTimer(&timer);
  sdkStartTimer(&timer);
  int *d;
  checkCudaErrors(cudaMalloc(&d, n * sizeof(int)));
  k<<<1, n>>>(d);
  getLastCudaError("k failed");
  sdkStopTimer(&timer);
  printf("%d cores/SM, %.3f ms on %d\\n", _ConvertSMVer2Cores(7, 5), sdkGetTimerValue(&timer),
         dev);
  sdkDeleteTimer(&timer);
  exit(EXIT_SUCCESS);
}
"""
    assert _run(qgpu.compile(src, "samples.cu", engine="interp")) == [6, 6]


def test_stdint_64_bit_names_are_long_long_in_both_compiles():
    """The system's stdint.h makes int64_t `long` for the 64-bit AST and `long long` for
    the -m32 PTX: the kernel is found (its two manglings differ) and computes in 64 bits."""
    src = b"""#include <stdint.h>
__global__ void k(uint64_t u, int64_t *out, const uint64_t *in) {
  int64_t v = in[threadIdx.x] * 3 + (int64_t)u;
  uint64_t w = u >> 3;
  out[threadIdx.x] = v + (int64_t)w - 2 * v;
}
"""
    out, inp, u = np.zeros(2, np.int64), np.array([5, 1 << 40], np.uint64), (1 << 35) + 17
    qgpu.compile(src, "stdint64.cu", engine="interp").get_function("k")(1, 2, [u, out, inp])
    assert list(out) == [(u >> 3) - (int(x) * 3 + u) for x in inp]


def test_system_typedefs_resolve_pointer_parameters():
    """Parameter types through the C library's typedefs, wherever they are declared (an
    extern "C" block, a namespace): the trimmed AST keeps every typedef."""
    src = b"""#include <cstdint>
#include <ctime>
#include <vector>
__global__ void k(const uint8_t *img, std::uint16_t *half, int32_t *out) {
  out[threadIdx.x] = img[threadIdx.x] + half[threadIdx.x];
}
"""
    m = qgpu.compile(src, "typedefs.cu", engine="interp")
    img, half = np.array([200, 7], np.uint8), np.array([60000, 1], np.uint16)
    out = np.zeros(2, np.int32)
    m.get_function("k")(1, 2, [img, half, out])
    assert list(out) == [60200, 8]
    assert [p.ctype for p in m.get_function("k").signature.params] == [
        "unsigned char", "unsigned short", "int"]
