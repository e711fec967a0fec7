"""The front end on narrow machine shapes (isa.limits.SLOTS, STAGES patched): a
representative part of the kernel suite compiles, keeps the shape's limits and equals its
oracles; division loops span several machine blocks; a kernel over the ROM gets the ROM
CompileError."""

import numpy as np
import pytest

import qgpu
from qgpu import suite
from qgpu.errors import CompileError
from qgpu.isa import limits

from .helpers import i32, launch

# division loops, barriers with loops (these ran away at SLOTS = 1), atomics, shuffles,
# shared memory, nested loops
SUBSET = ["dot", "divmod_signed", "divmod_unsigned", "gcd_euclid", "modpow", "dot_shared",
          "reduce_max_shared", "matmul", "histogram_shared", "allreduce_shfl_xor",
          "bitonic_sort", "compact_ballot", "early_return", "atomic_cas_product"]
SPECS = {s.name: s for s in suite.load_suite()}
IMPORTED_SHAPE = (limits.SLOTS, limits.STAGES)


@pytest.fixture
def shape(monkeypatch):
    """Set the machine's shape for one test; monkeypatch restores it (and the suite's
    compile cache, which holds programs of the patched shape)."""
    def set_shape(slots: int, stages: int) -> None:
        monkeypatch.setattr(limits, "SLOTS", slots)
        monkeypatch.setattr(limits, "STAGES", stages)
        monkeypatch.setattr(suite, "_compiled", {})
    return set_shape


def _check_kernel(name: str) -> None:
    spec = SPECS[name]
    program = suite.compiled_module(spec.source).get_function(spec.kernel).program
    assert len(program.blocks) <= limits.ROM_BLOCKS
    for block in program.blocks:
        assert len(block.stages) <= limits.STAGES
        assert all(1 <= len(st) <= limits.SLOTS for st in block.stages)
    for launch_spec in spec.launches:
        outputs, expected, tokens = suite.run_case(spec, launch_spec)
        assert tokens > 0
        for key, want in expected.items():
            assert np.array_equal(outputs[key], want), (name, key, outputs[key], want)


@pytest.mark.parametrize("slots", [1, 2])
@pytest.mark.parametrize("name", SUBSET)
def test_suite_subset_on_narrow_stages(shape, slots, name):
    shape(slots, 4)
    _check_kernel(name)


@pytest.mark.parametrize("name", ["divmod_signed", "dot_shared", "matmul", "modpow"])
def test_suite_subset_on_two_stage_one_slot_machine(shape, name):
    shape(1, 2)
    _check_kernel(name)


def test_shape_is_restored_after_the_patch():
    assert (limits.SLOTS, limits.STAGES) == IMPORTED_SHAPE


DIV = """
__global__ void d(const unsigned *a, const unsigned *b, unsigned *q) {
  int i = threadIdx.x;
  q[i] = a[i] / b[i];
}
"""


@pytest.mark.parametrize(("slots", "stages"), [(1, 4), (1, 2), (2, 2), (4, 4)])
def test_division_loop_edge_cases_on_every_shape(shape, slots, stages):
    shape(slots, stages)
    pairs = [(100, 7), (7, 100), (0, 5), (5, 0), (0xFFFFFFFF, 1), (0xFFFFFFFF, 0xFFFFFFFF),
             (0x80000000, 3), (1, 1)]
    a = np.array([p[0] for p in pairs], np.uint32)
    b = np.array([p[1] for p in pairs], np.uint32)
    q = np.zeros(len(pairs), np.uint32)
    _res, kernel = launch(DIV, "d", 1, len(pairs), a, b, q)
    assert list(q) == [x // y if y else 0xFFFFFFFF for x, y in pairs]
    assert all(len(blk.stages) <= stages for blk in kernel.program.blocks)


def test_one_slot_division_loop_spans_several_blocks(shape):
    shape(1, 2)
    _res, kernel = launch(DIV, "d", 1, 2, np.array([100, 9], np.uint32),
                          np.array([7, 2], np.uint32), np.zeros(2, np.uint32))
    loops = [b for b in kernel.program.blocks
             if any(ins.op == "min.u" for st in b.stages for ins in st)]
    assert loops, "the narrow loop body (min.u restoring step) is used"
    assert len(kernel.program.blocks) >= 4


def test_kernel_over_the_rom_is_a_clear_compile_error(shape):
    shape(1, 2)
    body = "".join(f"  if (a[{k}] > {k}) a[{k + 20}] = a[{k}] / a[{k + 40}];\n"
                   for k in range(130))
    with pytest.raises(CompileError, match="program ROM holds 1024"):
        qgpu.compile(f"__global__ void big(int *a) {{\n{body}}}\n",
                     engine="interp").get_function("big")


def test_signed_division_on_one_slot(shape):
    shape(1, 4)
    src = """__global__ void s(const int *a, const int *b, int *q, int *r) {
      int i = threadIdx.x; q[i] = a[i] / b[i]; r[i] = a[i] % b[i];
    }"""
    pairs = [(-7, 2), (7, -2), (-(1 << 31), -1), (-(1 << 31), 0), (13, 13), (-1, 5)]
    a, b = i32([p[0] for p in pairs]), i32([p[1] for p in pairs])
    q, r = np.zeros(len(pairs), np.int32), np.zeros(len(pairs), np.int32)
    launch(src, "s", 1, len(pairs), a, b, q, r)
    assert [int(x) for x in q] == [-3, -3, -(1 << 31), -1, 1, 0]
    assert [int(x) for x in r] == [-1, 1, 0, -1, 0, -1]
