"""The scheduler: earliest placement, packing into the head and unit budgets, the
attention layer, residual dims (no two live signals share one; reuse after exact
cancellation), and the norm ledger's sums of squares."""

import pytest

from qgpu.circuit import units
from qgpu.circuit.ir import Circuit
from qgpu.circuit.outputs import output_value
from qgpu.circuit.schedule import FIRST_FREE_DIM, LayerShape, schedule, stage
from qgpu.examples.demos import adder_machine, register_echo
from qgpu.primitives import CircuitError

SMALL = LayerShape.small()


def by_name(plan):
    return {n.name: plan.layer[n] for n in plan.order}


def test_nodes_go_to_the_earliest_layer_their_inputs_allow():
    plan = schedule(adder_machine().circuit, SMALL)
    at = by_name(plan)
    # token inputs only: layer 0, but a head holds 63 bits since the norm ballast, so the
    # registers' two reads take layer 0's four heads and `previous` goes to layer 1
    assert at["registers"] == 0 and at["previous"] == 1
    assert at["operand_a.restore"] == 0  # MLP of the read's own layer
    assert at["sum"] == 1 and at["speak"] == 2 and at["out_byte"] == 2
    assert plan.n_layers == 3 and plan.attention_layer == 2  # MLP-only last layer
    assert plan.heads[plan.order[[n.name for n in plan.order].index("registers")]] == [0, 1, 2, 3]


def chain_of_tables(n_tables, heads):
    c = Circuit("tables", 4)
    x = c.token_bits("x", 2, lambda t: t)
    outs = []
    for i in range(n_tables):
        t = c.table(f"t{i}", rows=1, width=2)
        t.write(0, x)
        outs.append(t.read(0, name=f"r{i}").bits)
    total = outs[0]
    for i, o in enumerate(outs[1:]):
        total, _ = units.add(c, total, o, name=f"s{i}")
    output_value(c, total, [0, 1, 2, 3])
    return schedule(c, LayerShape.small(heads=heads))


def test_full_layers_push_tables_later():
    plan = chain_of_tables(5, heads=4)
    layers = sorted(plan.layer[n] for n in plan.order if n.name.startswith("t"))
    assert layers == [0, 0, 0, 0, 1]
    assert plan.heads_used[:2] == [4, 1]


def test_full_mlps_push_units_later():
    c = Circuit("units", 12)
    x = c.token_bits("x", 2, lambda t: t % 4)
    for i, name in enumerate("abc"):  # 2 units each
        output_value(c, units.negate(c, x, name=name), [4 * i + v for v in range(4)])
    plan = schedule(c, LayerShape.small(mlp=5), reuse_dims=False)  # 4 usable units
    at = by_name(plan)
    assert (at["a"], at["b"], at["c"]) == (0, 0, 1)
    with pytest.raises(CircuitError, match="needs 2 MLP units, a layer has 1"):
        schedule(c, LayerShape.small(mlp=2), reuse_dims=False)


def test_a_table_too_wide_for_a_layer_is_refused():
    c = Circuit("wide", 4)
    x = c.token_bits("x", 2, lambda t: t)
    t = c.table("t", rows=1, width=2)
    t.write(0, x)
    reads = [t.read(0, name=f"r{i}").bits for i in range(5)]
    output_value(c, reads[0], [0, 1, 2, 3])
    with pytest.raises(CircuitError, match="needs 5 heads"):
        schedule(c, SMALL)


@pytest.mark.parametrize("reuse", [True, False])
def test_live_signals_never_share_dims(reuse):
    plan = schedule(adder_machine().circuit, SMALL, reuse_dims=reuse)
    for s in range(2 * plan.n_layers + 1):
        taken = {}
        for piece in plan.live_at(s + 1):
            for d in plan.ref_dims(piece):
                assert d >= FIRST_FREE_DIM
                assert d not in taken, (s, piece.describe(), taken.get(d))
                taken[d] = piece.describe()
    cancelled = [s for sigs in plan.cancels.values() for s in sigs]
    assert bool(cancelled) == reuse


def test_reuse_trades_units_for_dims():
    with_reuse = schedule(adder_machine().circuit, SMALL, reuse_dims=True)
    without = schedule(adder_machine().circuit, SMALL, reuse_dims=False)
    assert with_reuse.hidden < without.hidden
    assert sum(with_reuse.units) > sum(without.units)
    for L, pieces in with_reuse.cancels.items():  # a dead piece, cancelled after its reads
        for piece in pieces:
            assert last_read(with_reuse, piece) <= 2 * L + 2
            assert with_reuse.birth[piece.signal] < 2 * L + 2


def last_read(plan, piece):
    """The stage of the last node reading any dim of `piece`."""
    stages = [stage(n.sublayer, plan.layer[n]) for n in plan.order for ref in n.inputs()
              if ref.signal is piece.signal and set(ref.offsets) & set(piece.offsets)]
    return max(stages, default=plan.birth[piece.signal])


def test_ledger_sums_of_squares_follow_the_live_signals():
    plan = schedule(register_echo().circuit, SMALL, reuse_dims=False)
    # embedding: one + set.reg + set.value (4) + get.reg + is_get
    assert plan.embed_sumsq == 1 + 1 + 4 + 1 + 1
    # + restored bits (4) and found after layer 0, + hit and miss after layer 1
    assert plan.sumsq_after == [8 + 5, 8 + 5 + 2]
    assert plan.mean * plan.hidden >= max(plan.sumsq_after)


def pieces_circuit():
    """x's low bits are read in layer 0, its high bits only in layer 2."""
    c = Circuit("pieces", 16)
    x = c.token_bits("x", 4, lambda t: t)
    lo = units.negate(c, x[0:2], name="lo")
    again = units.negate(c, lo, name="again")
    total, _ = units.add(c, again, x[2:4], name="total")
    output_value(c, total, [0, 1, 2, 3])
    return c


def test_pieces_of_a_signal_die_apart_and_dims_pass_on_within_an_mlp():
    from qgpu.analysis.circuit_report import circuit_report
    from qgpu.circuit.compile import compile_circuit
    from qgpu.model.reference import ReferenceEngine

    c = pieces_circuit()
    compiled = compile_circuit(c, SMALL, cache=False)
    plan = compiled.plan
    x, lo = c.signals["x"], c.signals["lo"]
    low = next(p for p in plan.cancels[0] if p.signal is x)
    assert low.offsets == (0, 1)  # cancelled in layer 0, while x[2:4] stays live
    assert [p.offsets for p in plan.live_at(3) if p.signal is x] == [(2, 3)]
    # lo is born in the MLP that cancels x[0:2] and takes its dims there: that MLP adds
    # -x (the cancel) and lo's -x to the same dims, exactly
    assert plan.dims[lo] == plan.ref_dims(low)
    tokens = list(range(16))
    engine = ReferenceEngine(compiled.weights)
    logits = engine.prefill(engine.new_state(), tokens)
    assert logits.argmax(1).tolist() == [((t & 3) + (t >> 2)) % 4 for t in tokens]
    assert circuit_report(compiled, tokens).exact

