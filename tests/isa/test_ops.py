"""Native operation semantics against independent numpy references (wrap-around int32)."""

import random

import numpy as np
import pytest

from qgpu.isa.ops import ATOMIC_FNS, FLOAT_OPS, OPS

EDGE = [0, 1, 2, 3, 31, 32, 33, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0xFFFFFFFE,
        0x12345678, 0xDEADBEEF, 64, 255, 256, 65535, 65536]
rng = random.Random(7)
PAIRS = [(a, b) for a in EDGE for b in EDGE] + [
    (rng.getrandbits(32), rng.getrandbits(32)) for _ in range(300)]


def u(x):
    return np.uint32(x & 0xFFFFFFFF)


def s(x):
    return np.int32(np.uint32(x & 0xFFFFFFFF).view(np.int32))


def ref(op, a, b):
    with np.errstate(over="ignore"):
        ua, ub, sa, sb = u(a), u(b), s(a), s(b)
        table = {
            "add": ua + ub, "sub": ua - ub, "mul": ua * ub,
            "and": ua & ub, "or": ua | ub, "xor": ua ^ ub,
            "shl": ua << ub if b < 32 else 0, "shr.u": ua >> ub if b < 32 else 0,
            "shr.s": sa >> np.int32(min(b, 31)),
            "min.s": min(sa, sb), "min.u": min(ua, ub), "max.s": max(sa, sb),
            "max.u": max(ua, ub), "seteq": ua == ub, "setne": ua != ub,
            "setlt.s": sa < sb, "setle.s": sa <= sb, "setgt.s": sa > sb, "setge.s": sa >= sb,
            "setlt.u": ua < ub, "setle.u": ua <= ub, "setgt.u": ua > ub, "setge.u": ua >= ub,
        }
    return int(table[op]) & 0xFFFFFFFF


# the binary32 operations (isa.ops.FLOAT_OPS) are tested against numpy and exact values in
# tests/isa/test_f32.py
BINARY = [m for m, o in OPS.items() if o.kind == "alu" and o.n_srcs == 2
          and m not in FLOAT_OPS]


@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_match_numpy(op):
    fn = OPS[op].fn
    for a, b in PAIRS:
        assert fn(a, b) == ref(op, a, b), (op, hex(a), hex(b))


def test_every_binary_alu_op_is_covered():
    # ref() raises KeyError for an op it does not know, so a new op cannot go untested
    for op in BINARY:
        ref(op, 1, 2)


def test_unary_ops():
    for a in EDGE + [rng.getrandbits(32) for _ in range(300)]:
        assert OPS["popc"].fn(a) == bin(a).count("1")
        assert OPS["clz"].fn(a) == (32 if a == 0 else 31 - int(np.log2(a)) if a < 2**31 else 0)
        assert OPS["brev"].fn(a) == int(format(a, "032b")[::-1], 2)
        assert OPS["brev"].fn(OPS["brev"].fn(a)) == a
        assert OPS["mov"].fn(a) == a


def test_selp_uses_ptx_operand_order():
    assert OPS["selp"].fn(10, 20, 1) == 10
    assert OPS["selp"].fn(10, 20, 0) == 20


def test_shift_amounts_clamp_at_32():
    assert OPS["shl"].fn(1, 32) == 0 and OPS["shl"].fn(1, 0xFFFFFFFF) == 0
    assert OPS["shr.u"].fn(0x80000000, 40) == 0
    assert OPS["shr.s"].fn(0x80000000, 40) == 0xFFFFFFFF
    assert OPS["shr.s"].fn(0x7FFFFFFF, 99) == 0


def test_atomic_functions():
    assert ATOMIC_FNS["add"][0](0xFFFFFFFF, 2) == 1
    assert ATOMIC_FNS["min.s"][0](5, 0xFFFFFFFF) == 0xFFFFFFFF
    assert ATOMIC_FNS["min.u"][0](5, 0xFFFFFFFF) == 5
    assert ATOMIC_FNS["max.s"][0](5, 0xFFFFFFFF) == 5
    assert ATOMIC_FNS["cas"][0](7, 7, 9) == 9
    assert ATOMIC_FNS["cas"][0](7, 8, 9) == 7
    assert ATOMIC_FNS["exch"][0](7, 8) == 8
