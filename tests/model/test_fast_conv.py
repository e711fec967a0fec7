"""The native kernel's conv and scratch bookkeeping against the reference, bit for bit.

Since 2991b42 the kernel visits only conv channels whose input or window is nonzero
(window lists kept per state binding) and clears its scratch (slots, qkv) where it wrote
instead of memsetting it. A circuit of several tables on several GDN layers with
different live channel counts (key and value conv taps at lags 0..3, consecutive writes
to a row, a second table written from a first's read), run over a long random stream on
several states at once (fresh states, copies, interleaved steps of different states),
must give the reference's tokens and bit-identical recurrent and conv states."""

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from qgpu.circuit import units
from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import Circuit
from qgpu.circuit.outputs import default_token, output_value
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import Vocab
from qgpu.model.fast import FastEngine
from qgpu.model.fast_native import load_kernel
from qgpu.model.reference import ReferenceEngine

pytestmark = pytest.mark.skipif(load_kernel() is None,
                                reason="no C compiler: native kernel unavailable")

ROWS, BITS = 4, 4


def lag_circuit():
    """W(r, v) writes, Q(r) / P(r) / R(r) queries, N does nothing; every value is a token
    VAL(v) or OK."""
    v = Vocab()
    v.add("W", ROWS, 2 ** BITS)
    v.add("Q", ROWS)
    v.add("P", ROWS)
    v.add("R", ROWS)
    v.add("N")
    v.add("VAL", 2 ** BITS)
    v.add("OK")
    c = Circuit("fast_conv_lags", v.size)

    def kind(t):
        return v.parse(t)[0]

    def row_of(*kinds):
        return lambda t: v.parse(t)[1][0] if kind(t) in kinds else None

    wkey = c.token_onehot("w.key", ROWS, row_of("W"))
    wval = c.token_bits("w.val", BITS, lambda t: v.parse(t)[1][1] if kind(t) == "W" else 0)
    is_w = c.token_flag("is_w", lambda t: kind(t) == "W")
    is_q = c.token_flag("is_q", lambda t: kind(t) == "Q")
    is_p = c.token_flag("is_p", lambda t: kind(t) == "P")
    is_r = c.token_flag("is_r", lambda t: kind(t) == "R")
    qkey = c.token_onehot("q.key", ROWS, row_of("Q"))
    pkey = c.token_onehot("p.key", ROWS, row_of("P"))
    rkey = c.token_onehot("r.key", ROWS, row_of("R"))
    # a: key and value of this token; every bit of a value from another tap (0..3 back)
    a = c.table("a", rows=ROWS, width=BITS, presence=True)
    a.write(wkey, [(wval[i:i + 1], i) for i in range(BITS)])
    # b: key 2 tokens back, value bits 1 and 3 tokens back, written only after a W
    b = c.table("b", rows=ROWS, width=BITS, presence=True)
    b.write(wkey, [(wval[0:2], 1), (wval[2:4], 3)], key_lag=2, enable=is_w)
    read_a = a.read(qkey, name="qa")
    read_b = b.read(pkey, lags=(1,), name="pb")
    # d: written on every Q with what a holds (a second GDN layer, other channel counts)
    d = c.table("d", rows=ROWS, width=BITS + 1)
    d.write(qkey, [(read_a.bits, 0), (read_a.found, 0)], key_lag=0)
    read_d = d.read(rkey, name="rd")
    hit_a = units.all_of(c, [is_q, read_a.found], name="hit_a")
    prev_p = c.table("prev_p", rows=1, width=1)
    prev_p.write(0, [(is_p, 0)])
    was_p = prev_p.read(0, name="was_p").bits
    hit_b = units.all_of(c, [was_p, read_b.found], name="hit_b")
    d_bits = units.mux2(c, hit_a, read_a.bits, read_d.bits[0:BITS], name="a_or_d")
    out = units.mux2(c, hit_b, read_b.bits, d_bits, name="out")
    speak = units.any_of(c, [hit_a, hit_b, is_r],
                     name="speak")
    output_value(c, out, [v.id("VAL", x) for x in range(2 ** BITS)], when=speak)
    default_token(c, v.id("OK"))
    return c, v


def stream(v, n, rng):
    """Runs of writes (often the same row several tokens in a row), queries, no-ops."""
    out = []
    while len(out) < n:
        r = rng.random()
        row = int(rng.integers(ROWS))
        if r < 0.45:
            for _ in range(int(rng.integers(1, 5))):
                out.append(v.id("W", row if rng.random() < 0.7 else int(rng.integers(ROWS)),
                                int(rng.integers(2 ** BITS))))
        elif r < 0.6:
            out.append(v.id("Q", row))
        elif r < 0.7:
            out.append(v.id("P", row))
        elif r < 0.8:
            out.append(v.id("R", row))
        else:
            out += [v.id("N")] * int(rng.integers(1, 5))  # windows drain to zero
    return out[:n]


@pytest.fixture(scope="module")
def compiled():
    circuit, vocab = lag_circuit()
    return compile_circuit(circuit, LayerShape.small(), cache=False), vocab


def assert_same_states(fast, s_ref, s_fast):
    for i, S in s_ref.recurrent.items():
        np.testing.assert_array_equal(S.view(np.int32), s_fast.recurrent[i].view(np.int32))
        np.testing.assert_array_equal(s_ref.conv[i][fast.conv_channels(i)].view(np.int32),
                                      s_fast.conv[i].view(np.int32))


def test_model_has_gdn_layers_of_different_widths(compiled):
    fast = FastEngine(compiled[0].weights, backend="native")
    widths = [len(fast.conv_channels(i)) for i in sorted(fast.gdn)]
    assert len(widths) >= 2 and len(set(widths)) >= 2, widths


def test_states_and_tokens_bit_identical_over_interleaved_states(compiled):
    comp, vocab = compiled
    ref, fast = ReferenceEngine(comp.weights), FastEngine(comp.weights, backend="native")
    rng = np.random.default_rng(11)
    tokens = stream(vocab, 3000, rng)
    pairs = [(ref.new_state(), fast.new_state())]
    checks = 0
    for n, t in enumerate(tokens):
        r = rng.random()
        if r < 0.02 and len(pairs) < 4:  # a copied state continues alone, as does its source
            s_ref, s_fast = pairs[int(rng.integers(len(pairs)))]
            pairs.append((s_ref.copy(), s_fast.copy()))
        elif r < 0.03 and len(pairs) < 4:
            pairs.append((ref.new_state(), fast.new_state()))
        elif r < 0.05 and len(pairs) > 1:
            pairs.pop(int(rng.integers(len(pairs))))
        s_ref, s_fast = pairs[int(rng.integers(len(pairs)))]
        logits = ref.step(s_ref, t)
        if n % 3 == 0:  # full logits on the native kernel too
            got = int(np.argmax(fast.step(s_fast, t)))
        else:
            got = fast.step_greedy(s_fast, t)
        assert got == int(np.argmax(logits)), n
        if n % 50 == 0 or rng.random() < 0.02:
            assert_same_states(fast, s_ref, s_fast)
            checks += 1
    for s_ref, s_fast in pairs:
        assert_same_states(fast, s_ref, s_fast)
    assert checks > 50


def test_answers_follow_the_tables(compiled):
    """The stream drives real writes and reads, not only zeros: table a's row gets bit i
    from the W i tokens back (the last W(2, 5): bit 0 of 5, bit 1 of 9, bit 2 of N's 0,
    bit 3 of 5 = 1), Q reads it and copies it to d, R reads d."""
    comp, vocab = compiled
    fast = FastEngine(comp.weights, backend="native")
    state = fast.new_state()
    fast.consume(state, [vocab.id("W", 2, 9), vocab.id("W", 2, 5), vocab.id("N")] * 2
                 + [vocab.id("N")] * 3)
    assert fast.step_greedy(state, vocab.id("Q", 2)) == vocab.id("VAL", 1)
    assert fast.step_greedy(state, vocab.id("R", 2)) == vocab.id("VAL", 1)


def test_state_stepped_by_other_engines_in_between(compiled):
    """A state that another engine (the numpy backend, a second native plan) stepped is
    rescanned: each engine's window lists see the other's writes."""
    comp, vocab = compiled
    ref = ReferenceEngine(comp.weights)
    engines = [FastEngine(comp.weights, backend="native"),
               FastEngine(comp.weights, backend="native"),
               FastEngine(comp.weights, backend="numpy")]
    rng = np.random.default_rng(12)
    tokens = stream(vocab, 600, rng)
    s_ref, s_fast = ref.new_state(), engines[0].new_state()
    for n, t in enumerate(tokens):
        r = rng.random()  # numpy replaces the conv arrays (a rescan anyway): seldom
        engine = engines[2] if r < 0.03 else engines[1] if r < 0.3 else engines[0]
        assert engine.step_greedy(s_fast, t) == int(np.argmax(ref.step(s_ref, t))), n
    assert_same_states(engines[0], s_ref, s_fast)


def test_greedy_run_is_step_greedy_token_by_token(compiled):
    """greedy_run (a run of greedy tokens in one kernel call, up to a token of the stop
    set or the limit) gives step_greedy's tokens and bit-identical states."""
    comp, vocab = compiled
    fast = FastEngine(comp.weights, backend="native")
    rng = np.random.default_rng(5)
    s_step, s_run = fast.new_state(), fast.new_state()
    stop = np.zeros(fast.config.vocab_size, np.uint8)
    stop[[vocab.id("VAL", x) for x in range(0, 2 ** BITS, 3)]] = 1
    runs = stops = 0
    for t in stream(vocab, 400, rng):
        limit = int(rng.integers(1, 6))
        got = fast.greedy_run(s_run, t, stop, limit)
        want = [fast.step_greedy(s_step, t)]
        while not stop[want[-1]] and len(want) < limit:
            want.append(fast.step_greedy(s_step, want[-1]))
        assert got == want
        assert s_run.position == s_step.position
        runs += len(got) > 1
        stops += bool(stop[got[-1]])
    for part in ("recurrent", "conv"):
        for i, a in getattr(s_step, part).items():
            np.testing.assert_array_equal(a.view(np.int32), getattr(s_run, part)[i].view(np.int32))
    assert runs > 100 and stops > 10, (runs, stops)


def test_greedy_run_rejects_a_bad_stop_set(compiled):
    fast = FastEngine(compiled[0].weights, backend="native")
    state = fast.new_state()
    with pytest.raises(ValueError, match="stop must be"):
        fast.greedy_run(state, 0, np.zeros(3, np.uint8), 4)
    with pytest.raises(ValueError, match="limit must be"):
        fast.greedy_run(state, 0, np.zeros(fast.config.vocab_size, bool), 0)


PORTABLE_CHECK = """
import numpy as np
from qgpu.model.fast import FastEngine
from qgpu.model.fast_native import load_kernel
from qgpu.model.reference import ReferenceEngine
from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from tests.model.test_fast_conv import assert_same_states, lag_circuit, stream
print(load_kernel().qgpu_simd_lanes())
circuit, vocab = lag_circuit()
comp = compile_circuit(circuit, LayerShape.small(), cache=False)
ref, fast = ReferenceEngine(comp.weights), FastEngine(comp.weights, backend="native")
s_ref, s_fast = ref.new_state(), fast.new_state()
for t in stream(vocab, 600, np.random.default_rng(3)):
    assert fast.step_greedy(s_fast, t) == int(np.argmax(ref.step(s_ref, t)))
assert_same_states(fast, s_ref, s_fast)
print("same")
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 builds")
@pytest.mark.parametrize(("march", "lanes"), [("x86-64", 1), ("x86-64-v3", 8)])
def test_build_without_avx512_gives_the_same_bits(march, lanes, tmp_path):
    """The kernel built for a machine without AVX-512 (x86-64-v3: AVX2) or without AVX2
    (x86-64) takes its portable paths and gives the reference's tokens and states."""
    env = dict(os.environ, QGPU_NATIVE_MARCH=march, QGPU_CACHE_DIR=str(tmp_path))
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", PORTABLE_CHECK], env=env, cwd=root,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == [str(lanes), "same"], out.stdout
