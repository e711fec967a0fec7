"""The teacher-forced check (`qgpu run --check --forced`, engine "model-forced",
runtime.check.forced_launch) on the compiled model: the fast engine's layer-by-layer pass
over known tokens equals token-by-token stepping (greedy tokens and state, bit for bit);
a forced check passes where generation writes the interpreter's trace, reads memory from
the model's state, and stops at the first position where the model's greedy token
differs from the forced trace (a corrupted expected token, a perturbed weight)."""

import numpy as np
import pytest

from qgpu import suite
from qgpu.errors import CheckMismatch
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.protocol import encode_prompt, expected_trace, kind_of, name, tok
from qgpu.runtime.check import check_memory, forced_launch
from qgpu.runtime.compiled import load_machine
from qgpu.runtime.generate import generate_launch
from tests.runtime.programs import MEMORY_PROGRAMS, PROGRAMS

pytestmark = pytest.mark.slow

MEMORY = [(7 * a + 3) * (-1) ** a & 0xFFFFFFFF for a in range(20)]


@pytest.fixture(scope="module")
def machine():
    return load_machine(progress=False)


def _states_equal(a, b) -> bool:
    return all(np.array_equal(a.recurrent[i], b.recurrent[i]) for i in a.recurrent) and \
        all(np.array_equal(a.conv[i], b.conv[i]) for i in a.conv) and a.position == b.position


def test_forced_greedy_equals_step_greedy(machine):
    """Layer-by-layer over chunks of known tokens == one token at a time: the same greedy
    token after every token and a bit-identical state (chunks of 1, 5 and all)."""
    prog = assemble(PROGRAMS["loop"])
    want = expected_trace(run_launch(prog, 1, 4).events)
    seq = encode_prompt(prog, 1, 4) + want[:-1]
    engine = machine.engine
    stepped = engine.new_state()
    greedy = [engine.step_greedy(stepped, t) for t in seq]
    for chunk in (1, 5, len(seq)):
        state = engine.new_state()
        forced = []
        for a in range(0, len(seq), chunk):
            forced += engine.forced_greedy(state, seq[a:a + chunk])
        assert forced == greedy
        assert _states_equal(state, stepped)
    assert greedy[-len(want):] == want


@pytest.mark.parametrize("program", ["straight", "divergent", "loop", "bits"])
def test_forced_check_passes_and_equals_generation(machine, program):
    prog = assemble(PROGRAMS[program])
    run = forced_launch(machine, prog, 1, 3)
    gen = generate_launch(machine, prog, 1, 3)
    assert run.trace == gen.trace == expected_trace(run_launch(prog, 1, 3).events)
    assert run.memory == gen.memory
    assert _states_equal(run.state, gen.state)


@pytest.mark.parametrize("program", sorted(MEMORY_PROGRAMS))
def test_forced_check_reads_memory_from_the_state(machine, program):
    prog = assemble(MEMORY_PROGRAMS[program])
    res = run_launch(prog, 1, 4, memory=MEMORY)
    run = forced_launch(machine, prog, 1, 4, MEMORY, chunk=7)
    assert run.trace == expected_trace(res.events)
    assert run.memory == res.memory and run.memory != MEMORY[:len(run.memory)]
    bad = list(res.memory)
    bad[17] ^= 1
    with pytest.raises(CheckMismatch, match="global memory word 17"):
        check_memory(bad, run.memory)


@pytest.mark.parametrize("where", ["value", "exec", "last"])
def test_a_corrupted_expected_token_is_reported_at_its_position(machine, where):
    """The model reads a trace with one wrong token: its greedy token at that position is
    the interpreter's, so the check stops exactly there, naming both tokens."""
    prog = assemble(MEMORY_PROGRAMS["memory"])
    want = expected_trace(run_launch(prog, 1, 4, memory=MEMORY).events)
    kinds = [kind_of(t)[0] for t in want]
    i = {"value": kinds.index("V", 5),
         "exec": [k for k, kind in enumerate(kinds) if kind == "EXEC"][1],
         "last": len(want) - 1}[where]
    bad = list(want)
    bad[i] = tok("V", 0x4242)
    assert want[i] != bad[i]
    with pytest.raises(CheckMismatch) as err:
        forced_launch(machine, prog, 1, 4, MEMORY, expected=bad, chunk=16)
    text = str(err.value)
    assert f"token {i} of the trace" in text
    assert f"given trace {name(bad[i])}, model {name(want[i])}" in text


def test_forced_check_stops_where_a_perturbed_model_departs(machine):
    """Fault injection (as tests/runtime/test_generate.py): +4 on V(5)'s head weight makes
    the model write V(5) for 4; the forced check stops at the position where the
    generated trace first departs from the interpreter's."""
    from qgpu.model.fast import FastEngine
    from qgpu.model.weights import LM_HEAD
    from qgpu.runtime.compiled import ModelMachine

    prog = assemble("block 0:\n  mov r1, 4\n  jmp 1\nblock 1:\n  st.global [0], r1\n  exit\n")
    want = expected_trace(run_launch(prog, 1, 4).events)
    head = machine.compiled.weights[LM_HEAD]
    row = tok("V", 5)
    original = float(head[row, 0])
    head[row, 0] = original + 4.0
    try:
        faulty = ModelMachine(machine.compiled, machine.spec,
                              FastEngine(machine.compiled.weights))
        gen = generate_launch(faulty, prog, 1, 4, max_tokens=64)
        first = next(i for i, (a, b) in enumerate(zip(gen.trace, want, strict=False)) if a != b)
        with pytest.raises(CheckMismatch, match=rf"token {first} of the trace .*interpreter "
                                                r"V\(0x0004\), model V\(0x0005\)"):
            forced_launch(faulty, prog, 1, 4)
    finally:
        head[row, 0] = original
    assert forced_launch(machine, prog, 1, 4).trace == want


@pytest.mark.parametrize("kernel,index", [("dot", 0), ("matvec", 0), ("shfl_up_down", 0)])
def test_suite_launch_with_the_forced_engine(kernel, index):
    spec = {s.name: s for s in suite.load_suite()}[kernel]
    outputs, expected, tokens = suite.run_case(spec, spec.launches[index],
                                               engine="model-forced")
    assert tokens
    for key, want in expected.items():
        np.testing.assert_array_equal(outputs[key], want, err_msg=key)


def test_cli_run_forced(tmp_path, capsys):
    from qgpu.cli import main

    f = tmp_path / "bump.cu"
    f.write_text("__global__ void bump(int *out, int x) {\n"
                 "  if (threadIdx.x == 2) out[1] = x + 1;\n}\n")
    rc = main(["run", str(f), "--grid", "1", "--block", "3", "--forced",
               "--arg", "out=0,7", "--arg", "x=-5"])
    out = capsys.readouterr().out
    assert rc == 0 and "after  [0, -4]" in out and "engine model" in out


def test_checkpoint_machine_runs_the_forced_check(machine):
    """A CheckpointMachine (the loader of merged and exported checkpoints; here over the
    compiled weights in memory, offset 0) registered with engine_name(forced=True)."""
    import qgpu
    from qgpu.merge.circuits import machine_info
    from qgpu.runtime.checkpoint import engine_name, machine_from_weights, standalone_info

    info = standalone_info(machine.compiled.weights.config,
                           machine_info(machine.compiled, machine.spec))
    checkpoint = machine_from_weights(machine.compiled.weights, info)
    name = engine_name(checkpoint, check=True, forced=True)
    assert name.startswith("model-forced:")
    kernel = qgpu.compile("__global__ void bump(int *out, int x) {\n"
                          "  if (threadIdx.x == 2) out[1] = x + 1;\n}\n",
                          engine="interp").get_function("bump")
    out = np.array([5, 0], np.int32)
    res = kernel(1, 4, (out, 41), engine=name)
    assert out.tolist() == [5, 42] and res.tokens


def test_offset_engine_forced_greedy_maps_ids_and_flags_text_tokens():
    """Merged vocabularies: GPU token t is id offset + t; a greedy id outside the GPU
    tokens comes back negative, which the check names as a merged-vocabulary id."""
    from qgpu.runtime.check import _name
    from qgpu.runtime.checkpoint import OffsetEngine

    class Inner:
        def forced_greedy(self, state, ids):
            self.fed = list(ids)
            return [ids[0] + 1, 3, ids[1]]

    inner = Inner()
    engine = OffsetEngine(inner, offset=100, tokens=50)
    assert engine.forced_greedy(None, [1, 7, 9]) == [2, -4, 7]
    assert inner.fed == [101, 107, 109]
    assert _name(-4) == "id 3 of the merged vocabulary (not a GPU token)"
