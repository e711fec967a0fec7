"""Binary table keys (ir.BinaryKey): a row number as +-1 bits and a valid bit, decoded
in the key and query projections (BINARY_KEY * (match - mismatches), then the conv's
SiLU), store and read exactly like one-hot keys: a register echo over 32 rows keyed by
5 bits, written with a lagged key, checked against its oracle on the reference engine
(recurrent and chunked paths) and the fast engine, with reads of rows never written,
overwrites, and tokens whose key is not valid."""

import numpy as np
import pytest

from qgpu.circuit import units
from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.ir import READ_SCALE, BinaryKey, Circuit, Table
from qgpu.circuit.outputs import default_token, output_token, output_value
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import Vocab
from qgpu.model import layers
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine
from qgpu.primitives import CircuitError

ROWS, BITS = 32, 4


def binary_echo():
    """ROW(r) VAL(x): row r <- x (the key comes one token back); GET(r): VAL(x) or EMPTY."""
    v = Vocab()
    v.add("ROW", ROWS)
    v.add("VAL", 2 ** BITS)
    v.add("GET", ROWS)
    v.add("EMPTY")
    v.add("OK")
    c = Circuit("binary_echo", v.size)

    def field(kind):
        return lambda t: v.parse(t)[1][0] if v.parse(t)[0] == kind else 0

    wbits = c.token_bits("row.bits", 5, field("ROW"))
    wvalid = c.token_flag("row.valid", lambda t: v.parse(t)[0] == "ROW")
    val = c.token_bits("val", BITS, field("VAL"))
    is_val = c.token_flag("is_val", lambda t: v.parse(t)[0] == "VAL")
    qbits = c.token_bits("get.row", 5, field("GET"))
    is_get = c.token_flag("is_get", lambda t: v.parse(t)[0] == "GET")
    table = c.table("rows", rows=ROWS, width=BITS, presence=True)
    table.write(BinaryKey(wbits.ref, wvalid.ref), val, key_lag=1, enable=is_val)
    read = table.read(BinaryKey(qbits.ref, is_get.ref), name="get")
    hit = units.all_of(c, [is_get, read.found], name="hit")
    miss = units.threshold(c, [(is_get, 1.0), (read.found, -1.0)], 1.0, name="miss")
    output_value(c, read.bits, [v.id("VAL", x) for x in range(2 ** BITS)], when=hit)
    output_token(c, v.id("EMPTY"), when=miss)
    default_token(c, v.id("OK"))
    return c, v


def oracle(v, tokens):
    rows, out, last = {}, [], None
    for t in tokens:
        kind, index = v.parse(t)
        i = index[0] if index else None
        if kind == "VAL" and last is not None and last[0] == "ROW":
            rows[last[1]] = i
        if kind == "GET":
            out.append(v.id("VAL", rows[i]) if i in rows else v.id("EMPTY"))
        else:
            out.append(v.id("OK"))
        last = (kind, i)
    return out


def stream(v, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        r = int(rng.integers(0, ROWS))
        if rng.random() < 0.5:
            out += [v.id("ROW", r), v.id("VAL", int(rng.integers(0, 2 ** BITS)))]
        else:
            out.append(v.id("GET", r))
        if rng.random() < 0.1:
            out.append(v.id("VAL", int(rng.integers(0, 2 ** BITS))))  # no key: no write
    return out


@pytest.fixture(scope="module")
def compiled():
    c, v = binary_echo()
    return compile_circuit(c, LayerShape.small(), cache=False), v


@pytest.mark.parametrize("mode", ["recurrent", "chunked"])
def test_binary_keys_store_and_read_exactly(compiled, mode):
    comp, v = compiled
    tokens = [v.id("GET", 31), v.id("ROW", 31), v.id("VAL", 9), v.id("GET", 31),
              v.id("GET", 30), v.id("ROW", 0), v.id("VAL", 3), v.id("ROW", 31),
              v.id("VAL", 5), v.id("GET", 31), v.id("GET", 0)] + stream(v, 300, seed=3)
    seen = {}
    engine = ReferenceEngine(comp.weights, observer=lambda layer, site, x:
                             seen.setdefault((layer, site), []).append(x.copy()))
    logits = engine.prefill(engine.new_state(), tokens, mode=mode)
    assert logits.argmax(1).tolist() == oracle(v, tokens)
    plan = comp.plan
    table = next(n for n in plan.order if isinstance(n, Table))
    reads = np.concatenate(seen[(plan.layer[table], "mixer_out")])[:, plan.dims[table.reads[0].raw]]
    if mode == "recurrent":
        assert set(np.unique(np.abs(reads))) <= {0.0, np.float32(READ_SCALE)}
    h = np.concatenate(seen[(plan.layer[table], "residual_in")]) + np.concatenate(
        seen[(plan.layer[table], "mixer_out")])
    assert np.all(layers.mean_square(h) == plan.mean)


def test_binary_keys_on_the_fast_engine(compiled):
    comp, v = compiled
    tokens = stream(v, 400, seed=8)
    engine = FastEngine(comp.weights)
    assert engine.forced_greedy(engine.new_state(), tokens) == oracle(v, tokens)


def test_a_binary_key_must_name_every_row():
    c, _ = binary_echo()
    bits = c.token_bits("few", 3, lambda t: 0)
    flag = c.token_flag("few.valid", lambda t: False)
    with pytest.raises(CircuitError, match="names 8 rows of 32"):
        c.table("big", rows=32, width=1).write(BinaryKey(bits.ref, flag.ref), bits[0:1])


def ggml_l2norm(x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """llama.cpp's l2 norm of q and k (build_gdn_l2_norm): ggml_rms_norm(x, eps / dk) (sum
    of squares in double, scale 1/sqrtf(mean + eps) in float) times fl(1 / sqrt(dk))."""
    dk = x.shape[-1]
    mean = np.sum(x.astype(np.float64) ** 2, axis=-1, keepdims=True) / dk
    scale = np.float32(1.0) / np.sqrt((mean + eps / dk).astype(np.float32))
    return (x * scale).astype(np.float32) * np.float32(1.0 / np.sqrt(dk))


@pytest.mark.parametrize("dk", [16, 32, 64, 128, 256])
def test_the_key_magnitude_normalises_exactly_in_both_formulas(dk):
    from qgpu.circuit.ir import BINARY_KEY

    unit = np.eye(1, dk, dtype=np.float32)
    assert np.array_equal(ggml_l2norm(unit * np.float32(BINARY_KEY)), unit)
    assert np.array_equal(layers.l2norm(unit * np.float32(BINARY_KEY)), unit)
    if dk in (32, 128):   # the magnitude first used (2^7) is one ulp short in llama.cpp
        assert not np.array_equal(ggml_l2norm(unit * np.float32(128.0)), unit)


def test_key_channels_are_48_or_far_below_silus_zero():
    """Row r's key channel for every row number and valid bit a 5-bit key can carry: 48
    for the named row, <= -208 for every other (SiLU is exactly -0 below -104)."""
    from qgpu.circuit.emit_tables import _binary_rows
    from qgpu.circuit.ir import BINARY_KEY

    n, rows = 5, 32
    c = Circuit("k", 4)
    key = BinaryKey(c.token_bits("b", n, lambda t: 0).ref, c.token_flag("v", lambda t: 0).ref)
    qkv = np.zeros((rows, n + 2), np.float32)
    dims = {id(key.bits): list(range(n)), id(key.valid): [n]}
    _binary_rows(qkv, 0, rows, key, lambda ref: dims[id(ref)], n + 1)
    for named in range(rows):
        for valid in (1.0, -1.0):
            x = np.array([1.0 if named >> i & 1 else -1.0 for i in range(n)] + [valid, 1.0],
                         np.float32)
            ch = qkv @ x
            others = np.delete(ch, named)
            assert np.all(others <= -208)
            assert ch[named] == (BINARY_KEY if valid > 0 else ch[named])
            assert valid > 0 or ch[named] <= -208
