"""circuit.schedule: from a `Circuit` and a layer shape to a `Plan`: which layer (and
which heads / how many MLP units) each node gets, which residual dims each signal holds,
when dead signals (or dead pieces of them) are cancelled, and the sum of squares the
norm ledger keeps after every MLP.

Time is counted in *stages*: the embedding is stage 0, the mixer of layer L is stage
2L + 1 and its MLP stage 2L + 2. A node reads signals of earlier stages only: a table or
counter goes into a mixer after all its key, value, enable, clear, query and gate
signals exist (all its heads in that one layer), a unit into an MLP after its inputs
exist; which one, and when each dead piece is cancelled, is the list scheduler's choice
(`placement`: critical units first, then cancels, then units that free dims, then the
rest; key heads and MLP units per layer are the budgets). One unit per MLP is kept for
the ledger's rebalancing.

Residual dims: dim 0 is the constant one, dims 1-4 the ledger's ballast. With
`reuse_dims`, a piece of a signal whose last reader has run is cancelled (one unit per
dim adds -x exactly) in an MLP with spare units, and its dims go to signals born in that
same MLP (not raw ones) or later; without it every signal keeps its dims for good (more
dims, fewer units).

The last layer is the all-zero full-attention layer transformers needs to cache the
stack: the last scheduled layer when it has no table (its MLP still computes), else an
extra layer.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from qgpu.circuit.ir import EMBED, MIXER, RAW, READ_SCALE, Circuit, Node, Ref, Signal, Unit
from qgpu.circuit.placement import NEVER, graph, piece_sumsq, place
from qgpu.primitives import CircuitError

ONE = 0
BALLAST = [1, 2, 3, 4]
FIRST_FREE_DIM = 5
LEDGER_UNITS = 1  # the ledger's rebalancing unit in every MLP
TINY_BUDGET = 2.0 ** -25  # sum of squares of all raw dims must stay far below ulp(1)/2
# (layers over the unbounded-budget count aimed at, slack of a critical unit, least net
# dims freed by a unit placed before the rest, -8: also units adding a few): the
# placement settings schedule tries
SWEEP = [(extra, slack, score, False) for extra in range(8) for slack in (0, 2)
         for score in (1, -8)]
# with a layer budget (`max_layers`): later targets, and the remaining units oldest first
WIDE_SWEEP = [(extra, slack, score, oldest) for extra in range(0, 12, 2) for slack in (0, 2)
              for score in (1, -8, None) for oldest in (False, True)]
SPARE_LAYERS = 1  # layers over the fewest found that the narrowest plan may take


@dataclass(frozen=True)
class LayerShape:
    """The per-layer shape a circuit is compiled for (a base model's, to merge with it)."""

    key_heads: int = 16
    value_heads: int = 16
    key_dim: int = 128
    value_dim: int = 128
    mlp: int = 6144
    conv: int = 4
    attention_heads: int = 8
    attention_kv_heads: int = 2
    attention_head_dim: int = 256

    @classmethod
    def qwen35_2b(cls) -> LayerShape:
        return cls()

    @classmethod
    def small(cls, heads: int = 4, head_dim: int = 32, mlp: int = 512) -> LayerShape:
        return cls(heads, heads, head_dim, head_dim, mlp, 4, 2, 1, 16)

    def describe(self) -> dict:
        return dict(self.__dict__)

    def validate(self) -> None:
        if self.value_heads % self.key_heads:
            raise CircuitError("value heads must be a multiple of key heads")
        if self.key_dim < 4 or self.value_dim < 2 or self.mlp < 2 or self.conv < 1:
            raise CircuitError(f"layer shape {self} is too small")


def stage(sublayer: str, layer: int) -> int:
    if sublayer == EMBED:
        return 0
    return 2 * layer + (1 if sublayer == MIXER else 2)


@dataclass
class Plan:
    circuit: Circuit
    shape: LayerShape
    reuse_dims: bool
    layer: dict[Node, int]  # -1 for token inputs
    heads: dict[Node, list[int]]  # key heads of a table (read r, segment s: r * segs + s)
    n_layers: int
    attention_layer: int
    units: list[int]  # MLP units used per layer (with cancels, without the ledger unit)
    heads_used: list[int]
    dims: dict[Signal, list[int]]
    birth: dict[Signal, int]
    last_use: dict[Signal, int]
    cancels: dict[int, list[Ref]]  # layer -> pieces of signals cancelled in its MLP
    hidden: int
    mean: int
    embed_sumsq: int
    sumsq_after: list[int]  # non-ballast sum of squares after each layer's MLP
    order: list[Node] = field(default_factory=list)
    pieces: dict[Signal, list[Ref]] = field(default_factory=dict)  # liveness units

    @property
    def one(self) -> int:
        return ONE

    @property
    def ballast(self) -> list[int]:
        return list(BALLAST)

    def nodes_at(self, layer: int, sublayer: str) -> list[Node]:
        return [n for n in self.order if self.layer.get(n) == layer and n.sublayer == sublayer]

    def live_at(self, s: int) -> list[Ref]:
        """Pieces of signals holding their dims at stage s (born before, not yet
        cancelled); a whole signal is one Ref unless its pieces die apart."""
        gone = {p: 2 * L + 2 for L, ps in self.cancels.items() for p in ps}
        return [p for sig in self.dims for p in self.pieces[sig]
                if self.birth[sig] < s <= gone.get(p, NEVER)]

    def ref_dims(self, ref: Ref) -> list[int]:
        return [self.dims[ref.signal][o] for o in ref.offsets]


def schedule(circuit: Circuit, shape: LayerShape, reuse_dims: bool = True,
             spare_layers: int = SPARE_LAYERS, max_layers: int | None = None) -> Plan:
    """Place `circuit` for `shape`: the list scheduler (`placement`) runs with every
    setting of SWEEP; the plan kept is the narrowest (fewest dims) of those with at most
    `spare_layers` layers more than the fewest any setting reached. With `max_layers`
    (a layer budget: the width-targeted mode) the settings of WIDE_SWEEP run too and the
    plan kept is the narrowest within the budget (spare_layers is ignored). Without
    reuse_dims, one run that places units highest first and cancels nothing."""
    circuit.validate()
    shape.validate()
    if circuit.conv_window != shape.conv:
        raise CircuitError(f"circuit uses a conv window of {circuit.conv_window}, "
                           f"the layer shape {shape.conv}")
    g = graph(circuit)
    budget = shape.mlp - LEDGER_UNITS
    for sig in circuit.output_signals():
        if sig.producer not in g.index:
            raise CircuitError(f"output signal {sig.name} is not produced")
    runs = []
    settings = SWEEP if max_layers is None else SWEEP + WIDE_SWEEP
    for extra, slack, score, oldest in (settings if reuse_dims else [(0, NEVER, None, False)]):
        placed = place(g, shape, budget, reuse_dims, g.asap_layers + extra, slack, score,
                       oldest=oldest)
        n_layers, attention = _layers(g, placed)
        dims = _allocate(g, placed, n_layers)
        hidden = max([d + 1 for ds in dims.values() for d in ds], default=FIRST_FREE_DIM)
        runs.append((n_layers, hidden, len(runs), placed, dims, attention))
    fewest = min(r[0] for r in runs)
    limit = fewest + spare_layers if max_layers is None else max_layers
    if fewest > limit:
        raise CircuitError(f"the circuit needs {fewest} layers, the budget is {max_layers}")
    n_layers, hidden, _, placed, dims, attention = min(
        (r for r in runs if r[0] <= limit), key=lambda r: (r[1], r[0], r[2]))
    ready, layer, cancels = placed.born, placed.layer, placed.cancels
    last_use = {sig: ready[sig] for sig in ready}
    for node in g.order:
        for ref in node.inputs():
            last_use[ref.signal] = max(last_use[ref.signal], stage(node.sublayer, layer[node]))
    for sig in circuit.output_signals():
        last_use[sig] = NEVER
    raw_sumsq = sum(s.width * s.scale ** 2 for s in ready if s.kind == RAW)
    if raw_sumsq >= TINY_BUDGET:
        raise CircuitError(f"raw reads square-sum to {raw_sumsq:.3g}: too many to stay "
                           "norm-neutral")

    embed_sumsq = 1.0 + sum(s.sumsq for s in ready if ready[s] == 0)
    gone = {p: L for L, ps in cancels.items() for p in ps}
    sumsq_after = []
    for L in range(n_layers):
        sumsq_after.append(1.0 + sum(piece_sumsq(p) for s in ready if ready[s] <= 2 * L + 2
                                     for p in g.pieces[s] if gone.get(p, NEVER) > L))
    for value in [embed_sumsq, *sumsq_after]:
        if value != int(value):
            raise CircuitError(f"a sum of squares {value} is not an integer: use integer "
                               "constants")
    mean = 64
    while mean * hidden < max([embed_sumsq, *sumsq_after]) + 1:
        mean *= 4
    pad = n_layers - len(placed.units)
    return Plan(circuit, shape, reuse_dims, layer, placed.heads, n_layers, attention,
                placed.units[:n_layers] + [0] * pad,
                placed.heads_used[:n_layers] + [0] * pad, dims, ready, last_use,
                cancels, hidden, mean, int(embed_sumsq), [int(v) for v in sumsq_after],
                g.order, g.pieces)


def _layers(g, placed) -> tuple[int, int]:
    """(layers, the zero full-attention layer): the last computing layer when its mixer
    is empty, else one more."""
    compute = max([at + 1 for at in placed.layer.values()], default=0)
    has_mixer = {placed.layer[n] for n in g.order if n.sublayer == MIXER}
    if compute and compute - 1 not in has_mixer:
        return compute, compute - 1
    return compute + 1, compute


def _table_read(piece: Ref) -> bool:
    """A table read's raw piece (+-READ_SCALE per bit or 0: multiples of 2^-20)."""
    return piece.signal.kind == RAW and piece.signal.scale == READ_SCALE


def _restored(piece: Ref) -> bool:
    """A piece a restore unit makes (ir.restore_bits: +-1 bits from small steps on a
    read, every term a multiple of 1/2 below 4 in magnitude)."""
    producer = piece.signal.producer
    return isinstance(producer, Unit) and producer.op == "restore"


def _allocate(g, placed, n_layers: int) -> dict[Signal, list[int]]:
    """Residual dims per signal (offset order), piece by piece: a piece born at a stage
    takes dims freed before it, lowest first, else new ones. The dims of a bits, one-hot
    or constant piece cancelled in an MLP go to bits, one-hot or constant pieces born in
    that same MLP first (the cancel's -x and the new value's terms are summed into one
    MLP output: exact for small integers). Raw dims, of tiny scale, share an MLP this way
    only from table reads to restored bits (restored in place: the read's +-2^-20 or 0,
    its cancel and the restore's terms, all multiples of 2^-20 below 2^3 in magnitude,
    sum exactly in any order); other raw dims are free only after their MLP."""
    free: list[int] = []
    next_dim = FIRST_FREE_DIM
    at: dict[Ref, list[int]] = {}
    by_birth: dict[int, list[Ref]] = {}
    for sig in sorted(placed.born, key=lambda s: g.index[s.producer]):
        for p in g.pieces[sig]:
            by_birth.setdefault(placed.born[sig], []).append(p)
    for s in range(0, 2 * n_layers + 1):
        mlp = s >= 2 and s % 2 == 0
        cancelled = placed.cancels.get((s - 2) // 2, []) if mlp else []
        early = sorted(d for p in cancelled if p.signal.kind != RAW for d in at[p])
        early.reverse()
        reads = sorted(d for p in cancelled if _table_read(p) for d in at[p])
        reads.reverse()
        for p in sorted(by_birth.get(s, []), key=lambda p: (p.signal.kind == RAW,
                                                            not _restored(p))):
            picked = []
            for _ in range(len(p)):
                if reads and _restored(p):
                    picked.append(reads.pop())
                elif early and p.signal.kind != RAW:
                    picked.append(early.pop())
                elif free:
                    picked.append(heapq.heappop(free))
                else:
                    picked.append(next_dim)
                    next_dim += 1
            at[p] = sorted(picked)
        for d in early + reads + [d for p in cancelled if p.signal.kind == RAW
                                  and not _table_read(p) for d in at[p]]:
            heapq.heappush(free, d)
    dims: dict[Signal, list[int]] = {}
    for sig in sorted(placed.born, key=lambda s: (placed.born[s], g.index[s.producer])):
        row = [0] * sig.width
        for p in g.pieces[sig]:
            for o, d in zip(p.offsets, at[p], strict=True):
                row[o] = d
        dims[sig] = row
    return dims
