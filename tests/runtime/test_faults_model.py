"""Faults detected by the model itself (issue 14, machine.faults): a misaligned or
out-of-bounds global or shared access makes the model write the TRAP record
`TRAP(kind, lane, p) V(lo) V(hi)` as its next tokens, by its own argmax, and the launch
ends there; so does a barrier whose lanes wait at different barriers (machine.barriers:
`TRAP(barrier, 0, 0) V(lowest block) V(highest)` after the END that completes it); the
host raises the interpreter's error word for word, `--check` compares the record token
by token, and the fault fuzzer's random programs with wild addresses and divergent
barriers agree with the interpreter on every case."""

import pytest

from qgpu.cli import main
from qgpu.fuzz.faults import campaign
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.isa.faults import Fault
from qgpu.protocol import expected_trace, tok
from qgpu.protocol.vocab import kind_of
from qgpu.runtime.check import forced_launch
from qgpu.runtime.generate import generate_launch
from qgpu.runtime.model_engines import run_model
from tests.badinput.test_rows import MISALIGNED, OOB
from tests.protocol.test_traps import FAULTS

pytestmark = pytest.mark.slow

MORE = {  # the interpreter's own fault tests (tests/interp/test_interp.py), and forwarded
    "misaligned-2": ("block 0:\n  ld.global r1, [2]\n  exit\n", 1, 1),
    "oob-512": ("block 0:\n  ld.global r1, [512]\n  exit\n", 1, 1),
    "oob-negative": ("block 0:\n  ld.global r1, [r0-4]\n  exit\n", 1, 1),
    "shared-128": ("block 0:\n  st.shared [128], r1\n  exit\n", 1, 1),
    "forwarded-stage-3": ("block 0:\n  tid r1\n  shl r2, r1, 8\n  add r3, r2, 12\n"
                          "  st.global [r3+4], r1\n  exit\n", 2, 4),
    "after-clean-blocks": ("block 0:\n  tid r1\n  shl r2, r1, 2\n  st.global [r2], r1\n"
                           "  jmp 1\nblock 1:\n  ld.global r3, [r2]\n  sub r4, r3, 2\n"
                           "  atom.global.add r5, [r4], r1\n  exit\n", 1, 4),
    # divergent barriers: across the warps of a CTA, in the second of two CTAs, after
    # a first barrier all lanes pass (the epoch), and the last lane arriving by exit
    "barrier-warps": ("block 0:\n  warpid r1\n  setne r2, r1, 0\n  br r2, 1, 2\n"
                      "block 1:\n  bar 3\nblock 2:\n  bar 4\nblock 3:\n  exit\n"
                      "block 4:\n  exit\n", 1, 8),
    "barrier-cta-1": ("block 0:\n  ctaid r1\n  tid r2\n  and r3, r2, r1\n  br r3, 1, 2\n"
                      "block 1:\n  bar 3\nblock 2:\n  bar 4\nblock 3:\n  exit\n"
                      "block 4:\n  exit\n", 2, 4),
    "barrier-second-epoch": ("block 0:\n  bar 1\nblock 1:\n  tid r1\n  setlt.u r2, r1, 5\n"
                             "  br r2, 2, 3\nblock 2:\n  bar 4\nblock 3:\n  bar 5\n"
                             "block 4:\n  exit\nblock 5:\n  exit\n", 1, 12),
    "barrier-exit-last": ("block 0:\n  tid r1\n  setlt.u r2, r1, 2\n  br r2, 1, 4\n"
                          "block 1:\n  setlt.u r3, r1, 1\n  br r3, 2, 3\n"
                          "block 2:\n  bar 5\nblock 3:\n  bar 6\nblock 4:\n  exit\n"
                          "block 5:\n  exit\nblock 6:\n  exit\n", 1, 4),
}
BARRIER_CLEAN = {  # barriers all lanes reach alike: no trap, the launch runs to HALT
    "barrier-same": ("block 0:\n  tid r1\n  setlt.u r2, r1, 2\n  br r2, 1, 2\n"
                     "block 1:\n  bar 3\nblock 2:\n  bar 3\nblock 3:\n  exit\n", 2, 8),
    "barrier-some-exit": ("block 0:\n  tid r1\n  setlt.u r2, r1, 3\n  br r2, 1, 2\n"
                          "block 1:\n  bar 2\nblock 2:\n  exit\n", 1, 8),
}


@pytest.fixture(scope="module")
def machine():
    from qgpu.runtime.compiled import load_machine

    return load_machine(progress=False)


def _program(cases, name):
    src, grid, block, *_ = cases[name]
    return assemble(src), grid, block


@pytest.mark.parametrize("name", [*FAULTS, *MORE])
def test_the_model_writes_the_trap_record(machine, name):
    prog, grid, block = _program(FAULTS if name in FAULTS else MORE, name)
    with pytest.raises(Fault) as want:
        run_launch(prog, grid, block)
    expected = expected_trace(want.value.events)
    forced_launch(machine, prog, grid, block, [])        # every argmax, TRAP record included
    run = generate_launch(machine, prog, grid, block, [])  # greedy: the model's own tokens
    assert run.trace == expected and kind_of(run.trace[-3])[0] == "TRAP"
    assert tok("HALT") not in run.trace
    with pytest.raises(Fault) as got:
        run_model(prog, grid, block, [], machine=machine)
    assert str(got.value) == str(want.value) and got.value.trap == want.value.trap
    with pytest.raises(Fault):                             # --check: the same record
        run_model(prog, grid, block, [], machine=machine, check=True)


@pytest.mark.parametrize("source, words", [(OOB, "out-of-bounds global access at byte "
                                                 "address 4000 (ld.global) by lane 0"),
                                           (MISALIGNED, "misaligned global access at byte "
                                                        "address 2 (ld.global) by lane 0")])
def test_qgpu_run_on_the_model_exits_with_the_fault(machine, tmp_path, capsys, source, words):
    path = tmp_path / "k.cu"
    path.write_text(source)
    for extra in ([], ["--check"]):
        assert main(["run", str(path), "--engine", "model", "--grid", "1", "--block", "2",
                     "--arg", "a=1,2",
                     "--arg", "o=zeros:4", *extra]) == 1
        err = capsys.readouterr().err
        assert err.startswith("qgpu run: error: ") and words in err, err
        assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", BARRIER_CLEAN)
def test_barriers_reached_alike_do_not_trap(machine, name):
    prog, grid, block = _program(BARRIER_CLEAN, name)
    want = run_launch(prog, grid, block)
    run = generate_launch(machine, prog, grid, block, [])
    assert run.trace == expected_trace(want.events) and run.trace[-1] == tok("HALT")


def test_fault_fuzzer_on_the_model(machine):
    out = campaign(200, seed=141, machine=machine)
    assert out["mismatches"] == 0, out
    kinds = out["kinds"]
    for kind in ("misaligned-global", "out-of-bounds-global", "misaligned-shared",
                 "out-of-bounds-shared", "clean"):
        assert kinds.get(kind, 0) >= 10, kinds
    assert kinds.get("barrier", 0) >= 3, kinds
