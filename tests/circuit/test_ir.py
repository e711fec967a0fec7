"""The circuit IR: signal encodings, token inputs, table ports, graph checks and the
canonical description the cache is keyed by."""

import numpy as np
import pytest

from qgpu.circuit import units
from qgpu.circuit.ir import BITS, ONEHOT, RAW, Circuit
from qgpu.circuit.outputs import default_token, output_token, output_value
from qgpu.errors import QgpuError
from qgpu.primitives import CircuitError


def test_token_inputs_have_fixed_sum_of_squares():
    c = Circuit("t", 6)
    bits = c.token_bits("b", 3, lambda t: t)
    flag = c.token_flag("f", lambda t: t % 2 == 0)
    hot = c.token_onehot("h", 4, lambda t: t if t < 4 else None)
    const = c.token_const("k", [2.0, -1.0])
    values = {s.name: s.producer.values for s in (bits, flag, hot, const)}
    assert values["b"][5].tolist() == [1, -1, 1]
    assert values["f"][:, 0].tolist() == [1, -1, 1, -1, 1, -1]
    assert values["h"][4].tolist() == [0, 0, 0, 0, 1]  # the explicit none member
    assert np.all(values["h"].sum(1) == 1)
    assert (bits.sumsq, flag.sumsq, hot.sumsq, const.sumsq) == (3, 1, 1, 5)
    assert hot.kind == ONEHOT and hot.width == 5 and hot.members == 4
    assert hot.member(-1).offsets == (4,)


def test_refs_slice_and_describe():
    c = Circuit("t", 4)
    bits = c.token_bits("x", 8, lambda t: t)
    assert bits[2:5].offsets == (2, 3, 4)
    assert bits[2:5].describe() == "x[2:5]"
    assert bits[3].describe() == "x[3]"
    assert bits.ref.describe() == "x"
    assert bits[2:6][1:3].offsets == (3, 4)


@pytest.mark.parametrize("build, message", [
    (lambda c: c.token_bits("x", 2, lambda t: 7), "does not fit"),
    (lambda c: c.token_onehot("x", 2, lambda t: 3), "not in 0..1"),
    (lambda c: (c.token_flag("x", bool), c.token_flag("x", bool)), "already exists"),
])
def test_bad_token_inputs_are_refused(build, message):
    with pytest.raises(CircuitError, match=message):
        build(Circuit("t", 4))


def test_table_ports_check_their_signals():
    c = Circuit("t", 8)
    key = c.token_onehot("key", 4, lambda t: t % 4)
    val = c.token_bits("val", 3, lambda t: t % 8)
    other = c.token_onehot("other", 3, lambda t: None)
    table = c.table("m", rows=4, width=3, presence=True)
    with pytest.raises(CircuitError, match="bits, the table 3"):
        table.write(key, val[0:2])
    with pytest.raises(CircuitError, match="3 members for 4 rows"):
        table.write(other, val)
    with pytest.raises(CircuitError, match="conv window"):
        table.write(key, val, key_lag=4)
    with pytest.raises(CircuitError, match="needs bits"):
        table.write(key, [(val, 0)], enable=key)
    table.write(key, val)
    with pytest.raises(CircuitError, match="already has its write port"):
        table.write(key, val)
    read = table.read(key, name="r")
    assert read.raw.kind == RAW and read.raw.width == 4  # 3 bits + presence
    assert read.bits.kind == BITS and read.bits.width == 3 and read.found.width == 1
    assert read.bits.producer.units == 2 * 4 + 1


def test_graph_checks():
    c = Circuit("t", 4)
    x = c.token_bits("x", 2, lambda t: t)
    c.table("unread", rows=2, width=2).write(0, x)
    with pytest.raises(CircuitError, match="never read"):
        c.validate()
    c2 = Circuit("t2", 4)
    with pytest.raises(CircuitError, match="no outputs"):
        c2.validate()
    assert issubclass(CircuitError, QgpuError)


def test_output_rules_refuse_shared_tokens():
    c = Circuit("t", 8)
    x = c.token_bits("x", 2, lambda t: t % 4)
    output_value(c, x, [0, 1, 2, 3])
    with pytest.raises(CircuitError, match="another rule"):
        output_token(c, 2)
    default_token(c, 7)
    with pytest.raises(CircuitError, match="already"):
        default_token(c, 6)


def test_description_is_canonical_and_sensitive():
    def build(value):
        c = Circuit("t", 4)
        x = c.token_bits("x", 2, lambda t: (t + value) % 4)
        y = units.negate(c, x, name="y")
        output_value(c, y, [0, 1, 2, 3])
        return c.describe()

    assert build(0) == build(0)
    assert build(0) != build(1)  # token values are part of the description
