"""Faults as trace records (protocol v4, isa.faults): the interpreter's fault ends its
expected trace with TRAP(kind, lane, p) V(lo) V(hi); the decoder checks the record
against the block (a memory operation of an active lane) or the barrier state, and the
host ends a generation at the record and raises the interpreter's error word for word.
The model machine does not write TRAP yet (issue 14, point 1): the host path is tested
here with a replay engine that writes the interpreter's tokens."""

import pytest

from qgpu.errors import MachineError, ProtocolError
from qgpu.interp import run_launch
from qgpu.isa import limits
from qgpu.isa.asm import assemble
from qgpu.isa.faults import FAULT_KINDS, Fault
from qgpu.protocol import decode_prompt, decode_trace, encode_prompt, expected_trace, tok
from qgpu.protocol.vocab import split32
from qgpu.runtime.check import check_trace

FAULTS = {
    "oob-global": ("block 0:\n  tid r1\n  shl r2, r1, 10\n  ld.global r3, [r2]\n  "
                   "st.global [r2], r3\n  exit\n", 1, 4, "out-of-bounds-global", 1, 2, 1024),
    "misaligned-shared": ("block 0:\n  tid r1\n  add r2, r1, 1\n  ld.shared r3, [r2]\n  exit\n",
                          1, 4, "misaligned-shared", 0, 2, 1),
    "oob-store-offset": ("block 0:\n  tid r1\n  shl r2, r1, 2\n  st.global [r2+500], r1\n"
                         "  exit\n", 1, 4, "out-of-bounds-global", 3, 2, 512),
    "oob-shared-atomic": ("block 0:\n  tid r1\n  shl r2, r1, 6\n  atom.shared.add r3, [r2], 1\n"
                          "  exit\n", 2, 4, "out-of-bounds-shared", 2, 2, 128),
    "barrier": ("block 0:\n  tid r1\n  setlt.u r2, r1, 2\n  br r2, 1, 2\nblock 1:\n  bar 3\n"
                "block 2:\n  bar 4\nblock 3:\n  exit\nblock 4:\n  exit\n", 1, 8, "barrier", 0,
                0, 3 | 4 << 16),
}


def _fault(name):
    src, grid, block, *_ = FAULTS[name]
    prog = assemble(src)
    with pytest.raises(Fault) as err:
        run_launch(prog, grid, block, sizes=limits.MODEL_MEMORY)
    return prog, grid, block, err.value


@pytest.mark.parametrize("name", FAULTS)
def test_interpreter_faults_end_the_trace_with_their_record(name):
    prog, grid, block, fault = _fault(name)
    *_, kind, lane, p, address = FAULTS[name]
    t = fault.trap
    assert (t.kind, t.lane, t.position, t.address) == (kind, lane, p, address)
    trace = expected_trace(fault.events)
    assert trace[-3:] == [tok("TRAP", FAULT_KINDS.index(kind), lane, p), *split32(address)]
    assert tok("HALT") not in trace
    records = decode_trace(decode_prompt(encode_prompt(prog, grid, block, [])), trace)
    assert records[-1].kind == "trap" and records[-1].trap == t
    assert str(fault) in str(records[-1])
    if kind != "barrier":
        assert f"lane {lane}" in str(fault) and f"byte address {address}" in str(fault)


def test_decoder_rejects_bad_trap_records():
    prog, grid, block, fault = _fault("oob-global")
    launch = decode_prompt(encode_prompt(prog, grid, block, []))
    trace = expected_trace(fault.events)
    prog2 = assemble("block 0:\n  tid r1\n  shl r2, r1, 10\n  ld.global r3, [r2]\n  exit\n")
    launch2 = decode_prompt(encode_prompt(prog2, 1, 3, []))
    bad_lane = [tok("EXEC", 0, 0, 0b111, 0), tok("TRAP", 1, 3, 2)] + trace[-2:]
    with pytest.raises(ProtocolError, match="active lane"):
        decode_trace(launch2, bad_lane)
    not_memory = trace[:-3] + [tok("TRAP", 1, 1, 0)] + trace[-2:]     # p0 is `tid`
    with pytest.raises(ProtocolError, match="memory operation"):
        decode_trace(launch, not_memory)
    wrong_space = trace[:-3] + [tok("TRAP", 3, 1, 2)] + trace[-2:]    # shared, on ld.global
    with pytest.raises(ProtocolError):
        decode_trace(launch, wrong_space)
    with pytest.raises(ProtocolError, match="after the TRAP"):
        decode_trace(launch, trace + [tok("HALT")])
    with pytest.raises(ProtocolError, match="stream ends"):
        decode_trace(launch, trace[:-1])


def test_a_divergent_barrier_needs_its_trap():
    prog, grid, block, fault = _fault("barrier")
    launch = decode_prompt(encode_prompt(prog, grid, block, []))
    trace = expected_trace(fault.events)
    with pytest.raises(ProtocolError, match="TRAP record must follow"):
        decode_trace(launch, trace[:-3] + [tok("HALT")])
    wrong = trace[:-2] + list(split32(3 | 5 << 16))
    with pytest.raises(ProtocolError, match="barrier fault"):
        decode_trace(launch, wrong)


class Replay:
    """A stand-in engine that writes a given trace after GO (the model machine does not
    write TRAP yet); it counts the tokens it was asked for."""

    def __init__(self, trace):
        self.trace, self.asked = list(trace), 0

    def new_state(self):
        return None

    def consume(self, state, tokens):
        pass

    def step_greedy(self, state, token):
        self.asked += 1
        return self.trace[self.asked - 1] if self.asked <= len(self.trace) else tok("HALT")


@pytest.mark.parametrize("name", FAULTS)
def test_the_host_ends_at_the_trap_and_raises_the_interpreters_error(name):
    from qgpu.runtime.compiled import DEFAULT_SPEC
    from qgpu.runtime.model_engines import run_model

    prog, grid, block, fault = _fault(name)
    want = expected_trace(fault.events)
    engine = Replay(want + [tok("HALT")] * 5)

    class Machine:
        spec = DEFAULT_SPEC

        def __init__(self):
            self.engine = engine

        def check(self, program, grid, block):
            pass

        def read_memory(self, state):
            return [0] * 128

    with pytest.raises(Fault) as err:
        run_model(prog, grid, block, [], machine=Machine())
    assert str(err.value) == str(fault) and err.value.trap == fault.trap
    assert engine.asked == len(want)                   # generation stopped at the record
    prompt = encode_prompt(prog, grid, block, [])
    assert check_trace(prog, grid, block, [], prompt, want, [0] * 128) == want


def test_a_fault_is_a_machine_error():
    assert issubclass(Fault, MachineError)
