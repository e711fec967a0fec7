"""kernels/corpus: whole .cu files in the style people write them (host code, includes,
several kernels, 2-D launches, templates, byte images), each launch checked against a
numpy oracle on the interpreter, a sample on the model with its check, and the kernels
qgpu cannot run refused with the kernel, the file:line and the reason."""

from pathlib import Path

import numpy as np
import pytest

import qgpu
from qgpu.errors import CompileError
from qgpu.isa import f32

CORPUS = Path(__file__).resolve().parents[2] / "kernels" / "corpus"
RNG = np.random.default_rng(26)


def module(name: str, engine: str = "interp"):
    path = CORPUS / name
    return qgpu.compile(path.read_bytes(), str(path), engine=engine)


def _vector_add():
    a, b = RNG.integers(-99, 99, 12, dtype=np.int32), RNG.integers(-99, 99, 12, dtype=np.int32)
    c = np.zeros(12, np.int32)
    return "vector_add.cu", "vectorAdd", 3, 4, [a, b, c, 12], lambda: {2: a + b}


def _histogram():
    img = RNG.integers(0, 256, 40, dtype=np.uint8)
    bins = np.zeros(16, np.uint32)
    return "histogram.cu", "histogram", 2, 8, [img, bins, 40], lambda: {
        1: np.bincount(img >> 4, minlength=16).astype(np.uint32)}


def _matmul(n=4, grid=(2, 2)):
    a, b = (RNG.integers(-9, 9, n * n, dtype=np.int32) for _ in range(2))
    c = np.zeros(n * n, np.int32)
    return "matmul.cu", "matMul", grid, (2, 2), [a, b, c, n], lambda: {
        2: (a.reshape(n, n) @ b.reshape(n, n)).reshape(-1)}


def _transpose(kernel, grid, block, rows, cols):
    x = RNG.integers(0, 1000, rows * cols, dtype=np.int32)
    out = np.zeros(rows * cols, np.int32)
    return "transpose.cu", kernel, grid, block, [out, x, rows, cols], lambda: {
        0: x.reshape(rows, cols).T.reshape(-1)}


def _reduce(kernel, dtype):
    x = RNG.integers(0, 1000, 13).astype(dtype)
    out = np.zeros(2, dtype)
    return "reduce_template.cu", kernel, 2, 8, [x, out, 13], lambda: {
        1: np.array([x[:8].sum(), x[8:].sum()], dtype)}


def _bfs(kernel="bfsLevelInt", mask=np.int32):
    """bfs.cu's level step, its frontier masks as `mask` (bfsLevel: the file's bool masks,
    byte stores). Graph 0 -> 1, 2; 1 -> 3; 2 -> 3, 4; frontier {0, 2}; 3 already visited."""
    row, col = np.array([0, 2, 3, 5, 5, 5], np.int32), np.array([1, 2, 3, 3, 4], np.int32)
    frontier, updating = np.array([1, 0, 1, 0, 0], mask), np.zeros(5, mask)
    visited = np.array([1, 0, 1, 1, 0], np.bool_)
    cost = np.array([0, -1, 1, 2, -1], np.int32)
    return "bfs.cu", kernel, 2, 4, [row, col, frontier, updating, visited, cost, 5], \
        lambda: {2: np.zeros(5, mask), 3: np.array([0, 1, 0, 0, 1], mask),
                 5: np.array([0, 1, 1, 2, 2], np.int32)}


def _scale_float():
    x = (RNG.standard_normal(4) * 100).astype(np.float32)
    s = np.float32(-1.7)
    return "several.cu", "scale_float", 1, 4, [x, s], lambda: {0: x * s}


def _matmul_f32(m=4, n=4, k=8):
    """matmul_f32.cu: 4x4 tiles, two steps along K; the oracle sums in the kernel's order,
    each step one fma rounded once (isa.f32.fma, checked against exact rationals)."""
    a = (RNG.standard_normal(m * k) * 10).astype(np.float32)
    b = (RNG.standard_normal(k * n) * 10).astype(np.float32)
    c = np.zeros(m * n, np.float32)

    def oracle():
        ua, ub = a.view(np.uint32).reshape(m, k), b.view(np.uint32).reshape(k, n)
        out = np.zeros((m, n), np.uint32)
        for i in range(m):
            for j in range(n):
                s = 0
                for x in range(k):
                    s = f32.fma(int(ua[i, x]), int(ub[x, j]), s)
                out[i, j] = s
        return {2: out.reshape(-1).view(np.float32)}
    return "matmul_f32.cu", "matMulTiled", (n // 4, m // 4), (4, 4), [a, b, c, m, n, k], oracle


def _scan():
    x = RNG.integers(-50, 50, 7, dtype=np.int32)
    out = np.zeros(7, np.int32)
    return "scan_dynamic.cu", "scanBlock", 1, 8, [x, out, 7], lambda: {
        1: np.cumsum(x).astype(np.int32)}


def _cg_sum():
    x = RNG.integers(-50, 50, 13, dtype=np.int32)
    total = np.array([7], np.int32)
    return "cg_reduce.cu", "blockSum", 2, 8, [x, total, 13], lambda: {
        1: np.array([7 + x.sum()], np.int32)}


def _tile_reduce():
    x = RNG.integers(-50, 50, 15, dtype=np.int32)
    total = np.array([3], np.int32)
    return "tile_reduce.cu", "reduceTiles", 2, 8, [x, total, 15], lambda: {
        1: np.array([3 + x.sum()], np.int32)}


def _pair_max():
    x = RNG.integers(-50, 50, 8, dtype=np.int32)
    out = np.zeros(8, np.int32)
    pairs = np.maximum(x, x.reshape(4, 2)[:, ::-1].reshape(-1))
    return "tile_reduce.cu", "pairMax", 1, 8, [x, out], lambda: {
        1: (pairs * 10 + np.arange(8) % 2).astype(np.int32)}


def _conv():
    x = RNG.integers(-50, 50, 8, dtype=np.int32)
    out = np.zeros(8, np.int32)
    want = np.convolve(x, [1, -2, 3], mode="same").astype(np.int32)   # mask reversed: [3,-2,1]
    return "conv_constant.cu", "convolve", 2, 4, [x, out, 8], lambda: {1: want}


def _saxpy_int():
    """host_stdlib.cu: a file whose host code uses the C library without includes and the
    `<< <blocks, threads>> >` launch spelling."""
    x, y = (RNG.integers(-99, 99, 10, dtype=np.int32) for _ in range(2))
    want = (3 * x + y).astype(np.int32)
    return "host_stdlib.cu", "saxpyInt", 3, 4, [10, 3, x, y], lambda: {3: want}


def _count_above():
    x = RNG.integers(0, 23, 16, dtype=np.int32)
    count = np.array([2], np.int32)
    return "host_cpp.cu", "countAbove", 2, 8, [x, count, 10, 16], lambda: {
        1: np.array([2 + (x > 10).sum()], np.int32)}


def _dot_book():
    """dot_book.cu: grid-stride products, a shared-cache tree per block (24 values, 2
    blocks of 8: each thread sums a[i] * b[i] over i = tid, tid + 16)."""
    a, b = (RNG.integers(-30, 30, 24, dtype=np.int32) for _ in range(2))
    partial = np.zeros(2, np.int32)
    prod = (a * b).astype(np.int64)
    per_thread = prod[:16] + np.concatenate([prod[16:], np.zeros(8, np.int64)])
    return "dot_book.cu", "dot", 2, 8, [a, b, partial], lambda: {
        2: per_thread.reshape(2, 8).sum(axis=1).astype(np.int32)}


def _tile_sum_max():
    """cg_tiles_reduce.cu: cg::reduce per tile of 4 (plus, greater), clock() is 0."""
    x = RNG.integers(-50, 50, 14, dtype=np.int32)
    padded = np.concatenate([x, np.zeros(2, np.int32)]).reshape(4, 4)
    sums, maxima, elapsed = (np.full(n, 9, np.int32) for n in (4, 4, 14))
    return "cg_tiles_reduce.cu", "tileSumMax", 2, 8, [x, sums, maxima, elapsed, 14], lambda: {
        1: padded.sum(axis=1).astype(np.int32), 2: padded.max(axis=1).astype(np.int32),
        3: np.zeros(14, np.int32)}


SYMBOLS = {"conv_constant_mask": ("mask", [3, -2, 1])}   # cudaMemcpyToSymbol's role
SHARED = {"scan_dynamic_shared": 32}   # bytes of extern __shared__ (the <<<, , N>>>)


def _apply(kernel, oracle):
    x = RNG.integers(-20, 20, 4, dtype=np.int32)
    return "several.cu", kernel, 1, 4, [x, -5, 5], lambda: {0: oracle(x)}


CASES = {
    "vector_add": _vector_add, "histogram": _histogram, "matmul": _matmul,
    "transpose_shared": lambda: _transpose("transposeShared", 1, (4, 4), 4, 4),
    "transpose_naive": lambda: _transpose("transposeNaive", (2, 1), (2, 2), 2, 4),
    "reduce_int": lambda: _reduce("reduceSum<int>", np.int32),
    "reduce_unsigned": lambda: _reduce("reduceSum<unsigned>", np.uint32),
    "bfs_int_flags": _bfs, "bfs_bool_flags": lambda: _bfs("bfsLevel", np.bool_),
    "scale_float": _scale_float, "matmul_f32_tiles": _matmul_f32,
    "namespace_ops": lambda: _apply("ops::apply", lambda x: np.clip(x, -5, 5)),
    "namespace_alt": lambda: _apply("alt::apply", lambda x: 0 - x),
    "scan_dynamic_shared": lambda: _scan(),
    "cooperative_groups_sum": lambda: _cg_sum(),
    "tiled_partition_reduce": _tile_reduce, "tiled_partition_pairs": _pair_max,
    "conv_constant_mask": lambda: _conv(),
    "host_stdlib_saxpy": _saxpy_int, "host_cpp_count_above": _count_above,
    "book_dot": _dot_book, "cg_reduce_tiles": _tile_sum_max,
    # clang's closed form of the loop (mul.wide.u32, shr.u64) on register pairs
    "sum_to_n": lambda: ("several.cu", "sum_to_n", 1, 4, [np.zeros(4, np.int32), 5000],
                         lambda: {0: np.full(4, sum(range(5000)), np.int32)}),
}


def _run(case: str, engine: str):
    file, kernel, grid, block, args, oracle = CASES[case]()
    want = oracle()
    mod = module(file, engine)
    if case in SYMBOLS:
        mod.set_symbol(*SYMBOLS[case])
    mod.get_function(kernel)(grid, block, args, shared_mem=SHARED.get(case, 0))
    for k, expected in want.items():
        if expected.dtype == np.float32:          # bit for bit (signed zeros, NaNs)
            args[k], expected = args[k].view(np.uint32), expected.view(np.uint32)
        assert args[k].dtype == expected.dtype and list(args[k]) == list(expected), (case, k)


@pytest.mark.parametrize("case", sorted(CASES))
def test_corpus_on_the_interpreter(case):
    _run(case, "interp")


@pytest.mark.slow
@pytest.mark.parametrize("case", ["transpose_naive", "namespace_ops", "tiled_partition_reduce",
                                  "cg_reduce_tiles", "host_stdlib_saxpy", "book_dot"])
def test_corpus_sample_on_the_model_checked(case):
    _run(case, "model-check")


@pytest.mark.parametrize("file,kernel,where,reason", [
    ("several.cu", "named", "several.cu:27", "(a table of pointers); qgpu places integer "
                                             "data only"),
])
def test_unsupported_kernels_are_refused_alone(file, kernel, where, reason):
    mod = module(file)
    with pytest.raises(CompileError) as exc:
        mod.get_function(kernel)
    assert kernel in str(exc.value) and where in str(exc.value) and reason in str(exc.value)
