"""cuda.spill: kernels with more values alive than the 15 registers compile with spills to
local memory, run on the interpreter and equal numpy exactly; kernels that fit compile as
before; the model refuses a spilled kernel in one line."""

import numpy as np
import pytest

import qgpu
from qgpu.cuda import spill
from qgpu.cuda.ir import BasicBlock, CondBr, Function, Goto, Op, Ret, V
from qgpu.errors import CompileError, ProgramError
from qgpu.isa import Imm, limits
from qgpu.isa.program import local_words

from .helpers import i32, launch
from .test_regalloc import wide_kernel


def local_ops(program) -> list[str]:
    return [ins.op for b in program.blocks for st in b.stages for ins in st
            if ins.op.endswith(".local")]


def wide_expected(n: int, threads: int = 4) -> list[int]:
    out = []
    for t in range(threads):
        v = [(t + 4 * j) * (j + 2) for j in range(n)]
        acc = 0
        for j in range(n):
            acc ^= v[j] + v[(j + 1) % n]
        out.append(limits.s32(acc))
    return out


@pytest.mark.parametrize("n", [17, 24])
def test_many_live_values_spill_and_equal_numpy(n):
    a, out = i32(range(4 * n)), i32([0] * 4)
    res, k = launch(wide_kernel(n), "k", 1, 4, a, out)
    assert out.tolist() == wide_expected(n)
    words = k.template.stats["local_words"]
    assert 0 < words <= limits.LOCAL_WORDS and local_words(k.program) == words
    assert {"ld.local", "st.local"} == set(local_ops(k.program))
    used = {ins.dst for b in k.program.blocks for st in b.stages for ins in st if ins.dst}
    assert used <= set(range(1, limits.REGS))
    # no local word reaches the memory image (the trace's memory records)
    assert all(word.space != "local" for ev in res.events for word, _ in ev.mem_writes)


def test_a_kernel_that_fits_has_no_local_memory():
    a, out = i32(range(44)), i32([0] * 4)
    _, k = launch(wide_kernel(11), "k", 1, 4, a, out)
    assert out.tolist() == wide_expected(11)
    assert "local_words" not in k.template.stats and not local_ops(k.program)


FLOAT_DOT = """
__global__ void k(const float *a, const float *b, float *out) {
  __shared__ float cache[4];
  int t = threadIdx.x;
  float x0 = a[t], x1 = a[t + 4], x2 = a[t + 8], x3 = a[t + 12];
  float x4 = a[t + 16], x5 = a[t + 20], x6 = a[t + 24], x7 = a[t + 28];
  float y0 = b[t], y1 = b[t + 4], y2 = b[t + 8], y3 = b[t + 12];
  float y4 = b[t + 16], y5 = b[t + 20], y6 = b[t + 24], y7 = b[t + 28];
  float p[8] = {__fmul_rn(x0, y0), __fmul_rn(x1, y1), __fmul_rn(x2, y2), __fmul_rn(x3, y3),
                __fmul_rn(x4, y4), __fmul_rn(x5, y5), __fmul_rn(x6, y6), __fmul_rn(x7, y7)};
  cache[t] = __fadd_rn(__fadd_rn(__fadd_rn(p[0], p[1]), __fadd_rn(p[2], p[3])),
                       __fadd_rn(__fadd_rn(p[4], p[5]), __fadd_rn(p[6], p[7])));
  __syncthreads();
  if (t == 0) out[0] = __fadd_rn(__fadd_rn(cache[0], cache[1]), __fadd_rn(cache[2], cache[3]));
}
"""


def test_a_float_dot_with_a_shared_cache_spills_and_is_bit_exact():
    rng = np.random.default_rng(33)
    a = rng.standard_normal(32).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(1, np.float32)
    _, k = launch(FLOAT_DOT, "k", 1, 4, a, b, out)
    assert k.template.stats["local_words"] > 0
    p = (a * b).reshape(8, 4)                 # p[j][t]: thread t's product j, float32
    cache = ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]))
    want = (cache[0] + cache[1]) + (cache[2] + cache[3])
    assert out.view(np.uint32)[0] == np.float32(want).view(np.uint32)


LOOP = """
__global__ void k(const int *a, int *out, int rounds) {
  int t = threadIdx.x;
%s
  for (int r = 0; r < rounds + t; r++) {
%s
    if ((r ^ t) & 1) { s0 += s%d; }
  }
  __syncthreads();
  out[t] = %s;
}
"""


def test_values_live_across_a_divergent_loop_spill_exactly():
    n = 18
    inits = "\n".join(f"  int s{j} = a[t + 4 * {j % 8}] + {j};" for j in range(n))
    body = "\n".join(f"    s{j} = s{j} * 3 + s{(j + 1) % n};" for j in range(n))
    src = LOOP % (inits, body, n - 1, " ^ ".join(f"s{j}" for j in range(n)))
    a, out = i32(np.arange(32) * 7 - 50), i32([0] * 4)
    _, k = launch(src, "k", 1, 4, a, out, 3)
    assert k.template.stats["local_words"] > 0
    want = []
    for t in range(4):
        s = [int(a[t + 4 * (j % 8)]) + j for j in range(n)]
        for r in range(3 + t):
            s = _round(s)
            if (r ^ t) & 1:
                s[0] = limits.s32(s[0] + s[n - 1])
        acc = 0
        for v in s:
            acc ^= v
        want.append(limits.s32(acc))
    assert out.tolist() == want


def _round(s: list[int]) -> list[int]:
    """One iteration of LOOP's body: in program order, s[j] = s[j] * 3 + s[j + 1] (the
    last one reads s0 as just updated)."""
    s = list(s)
    for j in range(len(s)):
        s[j] = limits.s32(s[j] * 3 + s[(j + 1) % len(s)])
    return s


def test_the_model_refuses_a_spilled_kernel_in_one_line():
    import qgpu.runtime  # noqa: F401 - registers the model engines

    kernel = qgpu.compile(wide_kernel(20), filename="wide.cu").get_function("k")
    words = kernel.template.stats["local_words"]
    with pytest.raises(ProgramError, match=rf"kernel k \(wide.cu:1\): uses {words} "
                                           r"words of local memory per thread \(register "
                                           r"spills\); the model machine has none yet: run "
                                           r"it on the interpreter") as exc:
        kernel(1, 4, [i32(range(80)), i32([0] * 4)], engine="model")
    assert "\n" not in str(exc.value)


def test_more_spills_than_local_memory_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(limits, "LOCAL_WORDS", 2)
    with pytest.raises(CompileError, match=r"kernel k \(kernel.cu:1\): needs more than 15 "
                                           r"registers .* \(spilling it would take more than the "
                                           r"2 words of local memory per thread\)"):
        qgpu.compile(wide_kernel(24), engine="interp").get_function("k")


def _fn(blocks: dict[str, BasicBlock]) -> Function:
    fn = Function("f", blocks, next(iter(blocks)))
    fn.next_vreg = 100
    return fn


def test_loop_depth_weights_the_cost():
    v1, v2 = V(1), V(2)
    fn = _fn({
        "entry": BasicBlock("entry", [Op("tid", v1, ()), Op("mov", v2, (Imm(0),))],
                            Goto("loop")),
        "loop": BasicBlock("loop", [Op("add", v2, (v2, v1))], CondBr(v2, "loop", "done")),
        "done": BasicBlock("done", [Op("st.global", None, (Imm(0), v2))], Ret()),
    })
    assert spill.loop_depths(fn) == {"entry": 0, "loop": 1, "done": 0}
    cost = spill.costs(fn)
    assert cost[v1] == 1 + 10 and cost[v2] == 1 + 10 * 3 + 1


def test_spill_everywhere_stores_after_each_definition_and_loads_before_each_use():
    v1, v2 = V(1), V(2)
    fn = _fn({"entry": BasicBlock("entry", [Op("tid", v1, ()), Op("add", v2, (v1, v1))],
                                  CondBr(v1, "entry", "entry"))})
    temps = spill.insert_spills(fn, [V(9), v1])
    ops = fn.blocks["entry"].ops
    assert [op.op for op in ops] == ["tid", "st.local", "ld.local", "add", "ld.local"]
    assert ops[1].offset == ops[2].offset == ops[4].offset == 4     # word 1: v1's
    assert ops[1].srcs[1] == ops[0].dst and ops[3].srcs == (ops[2].dst, ops[2].dst)
    assert fn.blocks["entry"].term.cond == ops[4].dst
    assert v1 not in {x for op in ops for x in (*op.uses(), op.dst)}
    assert temps == {ops[0].dst, ops[2].dst, ops[4].dst}


@pytest.mark.parametrize("name", ["bitonic_sort", "compact_ballot", "isqrt_loop",
                                  "matmul_shared4", "reduce_f32_shared", "shfl_xor_transpose",
                                  "switch_dispatch", "vote_group_any_all"])
def test_suite_kernels_spilled_to_five_registers_equal_their_oracles(name, monkeypatch):
    """With only r1..r5 to allocate, these suite kernels spill (loops, divergence,
    barriers, shared memory, shuffles, votes, float routines): every launch must still
    equal its numpy oracle bit for bit."""
    from qgpu.cuda import compile as compile_cuda
    from qgpu.cuda import regalloc
    from qgpu.suite import load_named, positional_args, same_bits

    few = regalloc.USABLE[:5]
    monkeypatch.setattr(regalloc, "USABLE", few)
    monkeypatch.setattr(spill, "USABLE", few)
    spec = load_named(name)
    kernel = compile_cuda(spec.source).get_function(spec.kernel)   # not the suite's cache
    assert kernel.template.stats["local_words"] > 0
    used = {ins.dst for b in kernel.program.blocks for st in b.stages for ins in st if ins.dst}
    assert used <= set(few)
    for case in spec.launches:
        values = positional_args(spec, case["args"])
        kernel(case["grid"], case["block"], values)
        outputs = {p.name: v for p, v in zip(spec.params, values, strict=True) if p.pointer}
        for key, want in spec.oracle(case).items():
            assert same_bits(outputs[key], want), (name, case, key)


def test_the_cli_lists_a_spilled_kernel_as_interpreter_only(tmp_path, capsys):
    from qgpu.cli import main as cli_main

    src = tmp_path / "wide.cu"
    src.write_text(wide_kernel(20))
    assert cli_main(["run", str(src), "--list"]) == 0
    assert "runs on the interpreter only (" in capsys.readouterr().out
    assert cli_main(["run", str(src), "--grid", "1", "--block", "4", "--arg",
                     "a=" + ",".join(map(str, range(80))), "--arg", "out=zeros:4",
                     "--engine", "interp"]) == 0
    out = capsys.readouterr().out
    assert f"after  {wide_expected(20)}" in out and "words of local memory (register " \
        "spills)" in out
