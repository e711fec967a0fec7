"""cuda.warp: CUDA's 32-lane warp on qgpu's 4-lane machine warps (issue 33). warpSize is
32; shuffles, votes and __syncwarp whose lanes leave the machine warp go through the
warp scratch and the group barrier and give CUDA's answer (these used to be refused);
shuffles that stay inside 4 lanes keep the native one. Kernels run on the interpreter
and are checked against numpy (the algorithms) or PTX's shfl.sync rules (the sweeps).
Launches up to today's 16 threads per CTA: a CUDA warp partly filled, its absent lanes
never a shuffle's source (the ISA's rule: the lane keeps its own value)."""

import numpy as np
import pytest

import qgpu
from qgpu.errors import LaunchError
from qgpu.isa import Bar, limits

BLOCK = min(16, limits.MAX_THREADS_PER_CTA)

ALGORITHMS = """
__global__ void reduce(const int *in, int *out) {   // CUDA's tree reduction, 16 lanes
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = 8; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffff, v, off);
  if ((threadIdx.x & 31) == 0) out[blockIdx.x] = v;
}
__global__ void allreduce(const int *in, int *out) {
  int v = in[threadIdx.x];
#pragma unroll
  for (int m = 8; m > 0; m >>= 1)
    v = max(v, __shfl_xor_sync(0xffffffff, v, m));
  out[threadIdx.x] = v;
}
__global__ void scan(const int *in, int *out) {     // inclusive scan with __shfl_up_sync
  int v = in[threadIdx.x];
  int lane = threadIdx.x & (warpSize - 1);
  for (int off = 1; off < warpSize; off <<= 1) {
    int u = __shfl_up_sync(0xffffffff, v, off);
    if (lane >= off) v += u;
  }
  out[threadIdx.x] = v;
}
__global__ void compact(const int *in, int *out, int *count) {   // ballot compaction
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = threadIdx.x % warpSize;
  int v = in[i];
  unsigned kept = __ballot_sync(0xffffffff, v % 3 == 0);
  int base = blockIdx.x * blockDim.x;
  out[i] = -1;
  __syncwarp();
  if (v % 3 == 0) out[base + __popc(kept & ((1u << lane) - 1))] = v;
  if (lane == 0) count[blockIdx.x] = __popc(kept);
}
__global__ void votes(const int *in, int *out) {
  int p = in[threadIdx.x] > 0;
  out[threadIdx.x] = __any_sync(0xffffffff, p) + 2 * __all_sync(0xffffffff, p)
                     + 4 * __popc(__activemask()) + 1000 * warpSize;
}
__global__ void ids(int *out) {
  unsigned lane, warp;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm("mov.u32 %0, %%warpid;" : "=r"(warp));
  out[threadIdx.x] = (threadIdx.x & 31) + 100 * lane + 10000 * warp;
}
__global__ void broadcast(const int *in, int *out) {
  out[threadIdx.x] = __shfl_sync(0xffffffff, in[threadIdx.x], 13)
                     + 1000 * __shfl_sync(0xffffffff, in[threadIdx.x], 2, 4);
}
__global__ void wide(const long long *in, long long *out, float *f) {
  long long v = in[threadIdx.x];
  out[threadIdx.x] = __shfl_xor_sync(0xffffffff, v, 8);
  f[threadIdx.x] = __shfl_down_sync(0xffffffff, 0.5f * (float)threadIdx.x, 5);
}
"""


@pytest.fixture(scope="module")
def mod():
    return qgpu.compile(ALGORITHMS, filename="warp32.cu", engine="interp")


def rng_ints(n, seed, lo=-50, hi=50):
    return np.random.default_rng(seed).integers(lo, hi, n, dtype=np.int32)


def test_warp_size_is_32_and_lane_and_warp_ids_are_cudas(mod):
    out = np.zeros(BLOCK, np.int32)
    mod.get_function("ids")(1, BLOCK, [out])
    t = np.arange(BLOCK)
    assert out.tolist() == (t % 32 + 100 * (t % 32) + 10000 * (t // 32)).tolist()


def test_a_shfl_down_tree_reduction_sums_across_machine_warps(mod):
    x = rng_ints(BLOCK, 5)
    out = np.zeros(1, np.int32)
    mod.get_function("reduce")(1, BLOCK, [x, out])
    assert out.tolist() == [int(x.sum())]


def test_a_shfl_xor_butterfly_gives_every_lane_the_maximum(mod):
    x = rng_ints(BLOCK, 6)
    out = np.zeros(BLOCK, np.int32)
    mod.get_function("allreduce")(1, BLOCK, [x, out])
    assert out.tolist() == [int(x.max())] * BLOCK


def test_an_inclusive_scan_with_shfl_up_equals_cumsum(mod):
    x = rng_ints(BLOCK, 7)
    out = np.zeros(BLOCK, np.int32)
    mod.get_function("scan")(1, BLOCK, [x, out])
    assert out.tolist() == np.cumsum(x).tolist()


@pytest.mark.parametrize("grid", [1, 2])
def test_ballot_compaction_packs_each_ctas_kept_values(mod, grid):
    block = BLOCK // grid
    x = rng_ints(grid * block, 8 + grid, -20, 20)
    out, count = np.zeros(grid * block, np.int32), np.zeros(grid, np.int32)
    mod.get_function("compact")(grid, block, [x, out, count])
    want, counts = [], []
    for c in range(grid):
        kept = [int(v) for v in x[c * block:(c + 1) * block] if v % 3 == 0]
        want += kept + [-1] * (block - len(kept))
        counts.append(len(kept))
    assert out.tolist() == want and count.tolist() == counts


@pytest.mark.parametrize("values", [[3] * BLOCK, [0] * BLOCK, [0] * (BLOCK - 1) + [9],
                                    [1] * (BLOCK - 1) + [-1]])
def test_any_all_and_activemask_see_the_whole_warp(mod, values):
    x = np.array(values, np.int32)
    out = np.zeros(BLOCK, np.int32)
    mod.get_function("votes")(1, BLOCK, [x, out])
    p = x > 0
    assert out.tolist() == [int(p.any()) + 2 * int(p.all()) + 4 * BLOCK + 32000] * BLOCK


def test_an_idx_shuffle_reads_any_lane_and_a_width_4_one_its_segment(mod):
    x = rng_ints(BLOCK, 9)
    out = np.zeros(BLOCK, np.int32)
    mod.get_function("broadcast")(1, BLOCK, [x, out])
    t = np.arange(BLOCK)
    assert out.tolist() == (x[13] + 1000 * x[t // 4 * 4 + 2]).tolist()


def test_64_bit_and_float_shuffles_move_both_words(mod):
    x = (np.arange(BLOCK, dtype=np.int64) - 5) * 0x1_0000_0003
    out, f = np.zeros(BLOCK, np.int64), np.zeros(BLOCK, np.float32)
    mod.get_function("wide")(1, BLOCK, [x, out, f])
    t = np.arange(BLOCK)
    assert out.tolist() == x[t ^ 8].tolist()
    src = np.where(t + 5 < BLOCK, t + 5, t)
    assert f.tolist() == (0.5 * src).astype(np.float32).tolist()


SWEEP = """
__global__ void up(const int *in, int *out, int b, int c, unsigned m) {
  out[threadIdx.x] = __nvvm_shfl_sync_up_i32(m, in[threadIdx.x], b, c);
}
__global__ void down(const int *in, int *out, int b, int c, unsigned m) {
  out[threadIdx.x] = __nvvm_shfl_sync_down_i32(m, in[threadIdx.x], b, c);
}
__global__ void bfly(const int *in, int *out, int b, int c, unsigned m) {
  out[threadIdx.x] = __nvvm_shfl_sync_bfly_i32(m, in[threadIdx.x], b, c);
}
__global__ void idx(const int *in, int *out, int b, int c, unsigned m) {
  out[threadIdx.x] = __nvvm_shfl_sync_idx_i32(m, in[threadIdx.x], b, c);
}
"""


def ptx_shfl(mode, vals, b, c, mask):
    """PTX ISA shfl.sync, restated: lane j read when in the segment's range, named by the
    member mask and present; else the own value."""
    n, out = len(vals), []
    for t in range(n):
        lane, base = t % 32, t - t % 32
        bval, cval, seg = b & 31, c & 31, (c >> 8) & 31
        max_lane, min_lane = (lane & seg) | (cval & ~seg), lane & seg
        j, ok = {"up": (lane - bval, lane - bval >= max_lane),
                 "down": (lane + bval, lane + bval <= max_lane),
                 "bfly": (lane ^ bval, lane ^ bval <= max_lane),
                 "idx": (min_lane | (bval & ~seg), (min_lane | (bval & ~seg)) <= max_lane)}[mode]
        ok = ok and base + j < n and mask >> j & 1
        out.append(vals[base + j] if ok else vals[t])
    return out


def packed(width, clamp):
    return (32 - width) << 8 | clamp


@pytest.fixture(scope="module")
def sweep():
    return qgpu.compile(SWEEP, filename="sweep.cu", engine="interp")


@pytest.mark.parametrize("mode", ["up", "down", "bfly", "idx"])
@pytest.mark.parametrize("b, width, mask", [
    (1, 32, 0xFFFFFFFF), (5, 32, 0xFFFFFFFF), (8, 16, 0xFFFFFFFF), (3, 8, 0xFFFFFFFF),
    (13, 32, 0x0000F0F0), (2, 4, 0xFFFFFFFF), (6, 2, 0xFFFFFFFF), (31, 32, 0xFFFFFFFF),
    (12, 16, 0x00005555)])
def test_run_time_operands_follow_ptxs_rules(sweep, mode, b, width, mask):
    clamp = 0 if mode == "up" else 0x1F
    c = packed(width, clamp)
    x = rng_ints(BLOCK, b * 7 + width)
    out = np.zeros(BLOCK, np.int32)
    sweep.get_function(mode)(1, BLOCK, [x, out, b, c, mask])
    assert out.tolist() == ptx_shfl(mode, x.tolist(), b, c, mask)


@pytest.mark.parametrize("mode, call, b, width", [
    ("down", "__shfl_down_sync(0xffffffff, v, 8)", 8, 32),
    ("up", "__shfl_up_sync(0xffffffff, v, 5, 8)", 5, 8),
    ("bfly", "__shfl_xor_sync(0xffffffff, v, 12)", 12, 32),
    ("idx", "__shfl_sync(0xffffffff, v, 9, 16)", 9, 16),
    ("idx", "__shfl_sync(0xffffffff, v, 31)", 31, 32),
    ("bfly", "__shfl_xor_sync(0xffffffff, v, 3)", 3, 32),
    ("bfly", "__shfl_xor_sync(0xffffffff, v, 4, 4)", 4, 4),    # an earlier segment's lane
    ("bfly", "__shfl_xor_sync(0xffffffff, v, 6, 4)", 6, 4),
    ("bfly", "__shfl_xor_sync(0xffffffff, v, 1, 2)", 1, 2),
    ("down", "__shfl_down_sync(0xffffffff, v, 3, 4)", 3, 4)])
def test_constant_operands_follow_ptxs_rules(mode, call, b, width):
    src = (f"__global__ void k(const int *a, int *o) {{\n  int v = a[threadIdx.x];\n"
           f"  o[threadIdx.x] = {call};\n}}\n")
    x = rng_ints(BLOCK, b + width)
    out = np.zeros(BLOCK, np.int32)
    qgpu.compile(src, engine="interp").get_function("k")(1, BLOCK, [x, out])
    c = packed(width, 0 if mode == "up" else 0x1F)
    assert out.tolist() == ptx_shfl(mode, x.tolist(), b, c, 0xFFFFFFFF)


def group_barriers(kernel):
    t = kernel.template
    return sum(isinstance(b.terminator, Bar) and b.terminator.scope == "group"
               for b in t.program.blocks)


def test_shuffles_inside_4_lanes_keep_the_native_shuffle():
    src = """__global__ void k(int *a) {
  int v = a[threadIdx.x];
  v += __shfl_down_sync(0xffffffff, v, 1, 4) + __shfl_xor_sync(0xffffffff, v, 2);
  a[threadIdx.x] = v + __shfl_sync(0xffffffff, v, 0, 4);
}
"""
    k = qgpu.compile(src, engine="interp").get_function("k")
    assert group_barriers(k) == 0 and k.template.warp_scratch == 0
    x = rng_ints(8, 3)
    a = x.copy()
    k(1, 8, [a])
    t = np.arange(8)
    v = x + np.where(t % 4 < 3, x[np.minimum(t + 1, 7)], x) + x[t ^ 2]
    assert a.tolist() == (v + v[t // 4 * 4]).tolist()


def test_the_group_barrier_is_the_ctas_where_a_cta_is_one_warp(mod):
    k = mod.get_function("reduce")
    assert group_barriers(k) > 0
    program, _, _, _ = k.link(1, BLOCK, [rng_ints(BLOCK, 1), np.zeros(1, np.int32)])
    assert all(b.terminator.scope == "cta" for b in program.blocks
               if isinstance(b.terminator, Bar))
    if limits.MAX_THREADS_PER_CTA >= 64:     # two groups: the group barrier stays
        program, _, _, _ = k.link(1, 64, [rng_ints(64, 1), np.zeros(1, np.int32)])
        assert sum(isinstance(b.terminator, Bar) and b.terminator.scope == "group"
                   for b in program.blocks) == group_barriers(k)


def test_warp_scratch_past_shared_memory_is_a_launch_error_naming_it():
    words = limits.SHARED_WORDS - 4
    src = f"""__global__ void k(int *a) {{
  __shared__ int s[{words}];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = __shfl_down_sync(0xffffffff, s[threadIdx.x ^ 1], 8);
}}
"""
    k = qgpu.compile(src, engine="interp").get_function("k")
    k(1, 4, [np.zeros(4, np.int32)])       # the array + 4 words fit
    with pytest.raises(LaunchError, match=rf"{4 * words} bytes of static __shared__ data "
                                          rf"\+ 0 dynamic \+ 32 of warp_scratch"):
        k(1, 8, [np.zeros(8, np.int32)])


def test_the_list_shows_a_32_lane_kernel_as_runnable(tmp_path, capsys):
    from qgpu.cli import main

    path = tmp_path / "count.cu"
    path.write_text(ALGORITHMS)
    assert main(["run", str(path), "--list"]) == 0
    out = capsys.readouterr().out
    assert "reduce" in out and "cannot run" not in out


MATCH = """__global__ void k(const int *a, unsigned *o, int *p, unsigned m) {
  int pr;
  o[threadIdx.x] = __match_any_sync(0xffffffffu, a[threadIdx.x]);
  o[threadIdx.x + 16] = __match_all_sync(m, a[threadIdx.x] & 1, &pr);
  p[threadIdx.x] = pr;
  long long w = (long long)a[threadIdx.x] << 40 | 7;
  p[threadIdx.x + 16] = __match_any_sync(0x0ff0u, w);
}
"""


@pytest.mark.parametrize("values, mask", [
    ([1, 3, 1, 5, 3, 3, 1, 7, 9, 1, 3, 5, 5, 1, 3, 3], 0xFFFF),
    ([1, 3, 5, 2, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29], 0xFFF7),
    ([1, 3, 5, 3, 7, 9, 11, 13, 15, 17, 19, 21, 24, 25, 27, 29], 0xFFF7)])
def test_match_any_and_all_compare_the_whole_warp(values, mask):
    a = np.array(values[:BLOCK], np.int32)
    o, p = np.zeros(32, np.uint32), np.zeros(32, np.int32)
    qgpu.compile(MATCH, engine="interp").get_function("k")(1, BLOCK, [a, o, p, mask])
    lanes = range(BLOCK)
    assert o[:BLOCK].tolist() == [sum(1 << j for j in lanes if a[j] == a[t]) for t in lanes]
    same = len({int(a[j]) & 1 for j in lanes if mask >> j & 1}) == 1
    named = [t for t in lanes if mask >> t & 1]        # the calling lanes CUDA defines
    assert [int(o[16 + t]) for t in named] == [mask if same else 0] * len(named)
    assert [int(p[t]) for t in named] == [int(same)] * len(named)
    assert p[16:16 + BLOCK].tolist() == [
        sum(1 << j for j in lanes if a[j] == a[t] and 0x0FF0 >> j & 1) for t in lanes]


# --- full 32-lane warps: CTAs of 32 to 256 threads (the ISA's sizes, the interpreter) ---

FULL = """
__global__ void reduce32(const int *in, int *out) {   // CUDA's warp reduction, verbatim
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_down_sync(0xffffffff, v, off);
  if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) >> 5] = v;
}
__global__ void scan32(const int *in, int *out) {
  int v = in[threadIdx.x];
  int lane = threadIdx.x & 31;
  for (int off = 1; off < 32; off <<= 1) {
    int u = __shfl_up_sync(0xffffffff, v, off);
    if (lane >= off) v += u;
  }
  out[threadIdx.x] = v;
}
__global__ void compact32(const int *in, int *out, int *count) {
  unsigned lane = threadIdx.x & 31;
  int v = in[threadIdx.x], keep = v % 3 == 0;
  unsigned kept = __ballot_sync(0xffffffff, keep);
  out[threadIdx.x] = -1;
  __syncwarp();
  if (keep) out[threadIdx.x - lane + __popc(kept & ((1u << lane) - 1))] = v;
  int all = __all_sync(0xffffffff, v > -40);
  if (lane == 0) count[threadIdx.x >> 5] = __popc(kept) + 100 * all;
}
__global__ void butterfly32(const int *in, int *out) {
  int v = in[threadIdx.x];
  for (int m = 16; m > 0; m >>= 1) v = min(v, __shfl_xor_sync(0xffffffff, v, m));
  out[threadIdx.x] = v + 1000 * __shfl_sync(0xffffffff, in[threadIdx.x], 31 - (threadIdx.x & 31));
}
__global__ void lanes32(int *out) {
  unsigned lane, warp;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  asm("mov.u32 %0, %%warpid;" : "=r"(warp));
  out[threadIdx.x] = lane + 100 * warp + 10000 * (threadIdx.x % warpSize);
}
"""

FULL_BLOCKS = [b for b in (32, 64, 256) if b <= limits.MAX_THREADS_PER_CTA]


@pytest.fixture(scope="module")
def full():
    return qgpu.compile(FULL, filename="full.cu", engine="interp")


@pytest.mark.parametrize("grid, block", [(1, b) for b in FULL_BLOCKS] + [(2, 64)])
def test_cudas_32_lane_reduction_verbatim(full, grid, block):
    x = rng_ints(grid * block, block + grid)
    out = np.zeros(grid * block // 32, np.int32)
    full.get_function("reduce32")(grid, block, [x, out])
    assert out.tolist() == x.reshape(-1, 32).sum(1).tolist()


@pytest.mark.parametrize("block", FULL_BLOCKS)
def test_a_32_lane_scan_butterfly_and_reversal(full, block):
    x = rng_ints(block, block + 1)
    out = np.zeros(block, np.int32)
    full.get_function("scan32")(1, block, [x, out])
    assert out.tolist() == np.cumsum(x.reshape(-1, 32), 1).ravel().tolist()
    full.get_function("butterfly32")(1, block, [x, out])
    t = np.arange(block)
    warp_min = np.repeat(x.reshape(-1, 32).min(1), 32)
    assert out.tolist() == (warp_min + 1000 * x[t - t % 32 + 31 - t % 32]).tolist()


@pytest.mark.parametrize("block", FULL_BLOCKS)
def test_32_lane_ballot_compaction(full, block):
    x = rng_ints(block, block + 2, -40, 40)
    out, count = np.zeros(block, np.int32), np.zeros(block // 32, np.int32)
    full.get_function("compact32")(1, block, [x, out, count])
    want, counts = [], []
    for w in x.reshape(-1, 32):
        kept = [int(v) for v in w if v % 3 == 0]
        want += kept + [-1] * (32 - len(kept))
        counts.append(len(kept) + 100 * int((w > -40).all()))
    assert out.tolist() == want and count.tolist() == counts


@pytest.mark.parametrize("block", FULL_BLOCKS)
def test_lane_and_warp_ids_of_full_warps(full, block):
    out = np.zeros(block, np.int32)
    full.get_function("lanes32")(1, block, [out])
    t = np.arange(block)
    assert out.tolist() == (t % 32 + 100 * (t // 32) + 10000 * (t % 32)).tolist()


@pytest.mark.skipif(limits.MAX_THREADS_PER_CTA < 64, reason="needs CTAs of 2 warps")
def test_syncwarp_orders_its_warp_and_not_another():
    from qgpu.interp.races import RaceError

    src = """__global__ void k(int *out, int other) {
  __shared__ int s[64];
  s[threadIdx.x] = threadIdx.x * 3;
  __syncwarp();
  out[threadIdx.x] = s[threadIdx.x ^ other];
}
"""
    k = qgpu.compile(src, engine="interp").get_function("k")
    out = np.zeros(64, np.int32)
    k(1, 64, [out, 17])                   # lane ^ 17: the own warp, ordered by __syncwarp
    assert out.tolist() == ((np.arange(64) ^ 17) * 3).tolist()
    with pytest.raises(RaceError, match="no __syncthreads"):
        k(1, 64, [out, 32])               # the other warp's word: only __syncthreads orders
