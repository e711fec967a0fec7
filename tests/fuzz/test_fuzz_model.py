"""Differential fuzzing of the compiled model against the interpreter
(qgpu/fuzz/model_launches.py): random machine programs and the CUDA fuzzer's kernels run on
the model with checking (teacher forced, and some generated): tokens equal, memory read
from the model's state equal to the interpreter's. Launches the model machine refuses
are counted with their reason and must stay rare. The generator's programs are valid,
terminate and never fault (checked on the interpreter alone, without the model)."""

import random
from collections import Counter

import pytest

from qgpu.circuit.machine.spec import MachineSpec, check_launch
from qgpu.errors import LaunchError
from qgpu.fuzz.model_launches import (
    Outcome,
    check_on_model,
    fuzz,
    minimise,
    run_case,
    run_cases,
)
from qgpu.fuzz.model_programs import Case, random_case
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble, disassemble
from qgpu.isa.limits import launch_warps
from qgpu.isa.program import Bar, Br, Jmp
from qgpu.protocol import tok

SMALL = {"max_blocks": 8, "max_memory": 16}
CHUNKS = 6
CASES_PER_CHUNK = 40


@pytest.fixture(scope="module")
def machine():
    from qgpu.runtime.compiled import load_machine

    return load_machine(progress=False)


def _failures(results: list[Outcome]) -> str:
    bad = [r for r in results if r.status not in ("ok", "refused")]
    return "\n".join(f"{r.source} seed {r.seed}: {r.status}: {r.detail}\n"
                     + (disassemble(r.case.program) if r.case else "") for r in bad[:3])


def _check_campaign(results: list[Outcome], cases: int) -> None:
    assert len(results) == cases
    assert not _failures(results), _failures(results)
    refused = [r for r in results if r.status == "refused"]
    assert len(refused) <= max(2, cases // 10), Counter(r.detail for r in refused)
    ran = [r for r in results if r.status == "ok"]
    assert ran and all(r.trace_tokens > 0 and r.prompt_tokens > 0 for r in ran)


def test_generated_programs_are_valid_terminate_and_cover_the_machine():
    """500 random cases, interpreter only: valid programs (Program.validate ran when they
    were built; the assembly round-trips), the model machine accepts every launch (multi-warp
    ones included), no launch
    faults, and together they use every operation of the machine, br, bar and loops."""
    spec = MachineSpec(slots=1)
    ops, terms, refused, back_edges = Counter(), Counter(), 0, 0
    for seed in range(500):
        case = random_case(random.Random(seed), spec.op_names)
        assert disassemble(assemble(disassemble(case.program))) == disassemble(case.program)
        try:
            check_launch(spec, case.program, case.grid, case.block)
        except LaunchError as exc:
            assert "warp" in str(exc)
            refused += 1
        run_launch(case.program, case.grid, case.block, memory=case.memory or None)
        for b, blk in enumerate(case.program.blocks):
            ops.update(ins.op for st in blk.stages for ins in st)
            terms[type(blk.terminator).__name__] += 1
            if isinstance(blk.terminator, Br) and blk.terminator.taken <= b:
                back_edges += 1
    assert set(ops) == set(spec.op_names), sorted(set(spec.op_names) ^ set(ops))
    assert terms[Br.__name__] and terms[Bar.__name__] and back_edges > 50
    assert refused == 0


def test_high_placed_programs_put_barriers_past_block_64_in_multi_warp_ctas():
    """random_case(high=1): valid programs at blocks 48..127 that run on the interpreter
    without a fault; barriers past block 64 in CTAs of several warps are frequent (issue
    36's class), and high=0 gives the cases the generator always gave."""
    spec = MachineSpec(slots=1)
    classed = 0
    for seed in range(200):
        case = random_case(random.Random(seed), spec.op_names, high=1.0)
        check_launch(spec, case.program, case.grid, case.block)
        run_launch(case.program, case.grid, case.block, memory=case.memory or None)
        first = case.program.blocks[0].terminator
        assert isinstance(first, Jmp) and first.target >= 48
        bars = [b.terminator.target for b in case.program.blocks
                if isinstance(b.terminator, Bar)]
        warps = launch_warps(case.grid, case.block)
        classed += bool(bars) and max(bars) >= 65 and warps > case.grid
        plain = random_case(random.Random(seed), spec.op_names)
        assert disassemble(plain.program) == disassemble(
            random_case(random.Random(seed), spec.op_names, high=0.0).program)
    assert classed >= 20, classed


@pytest.mark.slow
def test_high_placed_programs_on_the_model(machine):
    """60 high-placed cases (seed 36): the machine before issue 36's fix mismatched on
    several of them (a warp waiting at a barrier past block 64 trapped), none now."""
    results = fuzz(machine, 60, seed=36, mode="forced", source="isa", high=1.0)
    _check_campaign(results, 60)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_random_machine_programs_on_the_model(machine, chunk):
    results = fuzz(machine, CASES_PER_CHUNK, seed=5000 + chunk, mode="forced", source="isa",
                   **SMALL)
    _check_campaign(results, CASES_PER_CHUNK)


@pytest.mark.slow
def test_cuda_fuzzer_kernels_on_the_model(machine):
    """The CUDA fuzzer's kernels through the front end: model == interpreter, and the
    outputs read from the model's state == the fuzzer's C-semantics evaluation."""
    results = fuzz(machine, 30, seed=6000, mode="forced", source="cuda")
    _check_campaign(results, 30)


@pytest.mark.slow
def test_random_machine_programs_generated_on_the_model(machine):
    """The same check after greedy generation (the default run), fewer cases."""
    results = fuzz(machine, 20, seed=7000, mode="generate", source="isa", **SMALL)
    _check_campaign(results, 20)


@pytest.mark.slow
def test_generate_mode_batches_give_the_verdicts_of_one_at_a_time(machine):
    """A batch of generate-mode cases (run_cases: the launches generated together,
    runtime.generate_many) against each case run alone (run_case: generate_launch):
    the same statuses, details, token counts and memories, CUDA cases among them."""
    together = run_cases(machine, range(10), 7100, "generate", "both", 0.25, SMALL)
    alone = [run_case(machine, 7100, i, "generate", "both", 0.25, **SMALL) for i in range(10)]
    assert sum(r.status == "ok" for r in together) >= 6
    assert {r.source for r in together} == {"isa", "cuda"}
    for a, b in zip(together, alone, strict=True):
        assert (a.source, a.seed, a.status, a.detail) == (b.source, b.seed, b.status, b.detail)
        assert (a.prompt_tokens, a.trace_tokens) == (b.prompt_tokens, b.trace_tokens)
        assert a.extra.get("memory") == b.extra.get("memory")


@pytest.mark.slow
def test_the_fuzzer_reports_a_faulty_model_and_minimises_the_case(machine):
    """Fault injection (+4 on V(5)'s head weight: the model writes V(5) for 4): the fuzz
    check reports a mismatch in both modes, and the minimiser shrinks the case to one that
    still mismatches on the faulty model (and passes on the healthy one). One faulty
    engine for both modes (an engine holds its own copy of the weights' arrays)."""
    import gc

    from qgpu.model.fast import FastEngine
    from qgpu.model.weights import LM_HEAD
    from qgpu.runtime.compiled import ModelMachine

    prog = assemble("block 0:\n  tid r1\n  mov r2, 4\n  add r3, r1, 9\n  .writeback r1, r2, r3"
                    "\n  jmp 1\nblock 1:\n  st.global [8], r2\n  exit\n")
    case = Case(prog, 1, 3, [1, 2, 3])
    modes = ("forced", "generate")
    assert all(check_on_model(machine, case, mode).status == "ok" for mode in modes)
    head = machine.compiled.weights[LM_HEAD]
    original = float(head[tok("V", 5), 0])
    head[tok("V", 5), 0] = original + 4.0
    smalls = {}
    try:
        faulty = ModelMachine(machine.compiled, machine.spec, FastEngine(machine.compiled.weights))
        for mode in modes:
            out = check_on_model(faulty, case, mode)
            assert out.status == "mismatch" and "V(0x0005)" in out.detail
            smalls[mode] = small = minimise(faulty, case, mode)
            assert check_on_model(faulty, small, mode).status == "mismatch"
    finally:
        head[tok("V", 5), 0] = original
        faulty = None
        gc.collect()
    for mode, small in smalls.items():
        assert small.program.instruction_count() < prog.instruction_count()
        assert small.block == 1 and small.memory == []
        assert check_on_model(machine, small, mode).status == "ok"
