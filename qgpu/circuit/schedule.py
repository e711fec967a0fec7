"""circuit.schedule: from a `Circuit` and a layer shape to a `Plan`: which layer (and
which heads / how many MLP units) each node gets, which residual dims each signal holds,
when dead signals are cancelled, and the sum of squares the norm ledger keeps after
every MLP.

Time is counted in *stages*: the embedding is stage 0, the mixer of layer L is stage
2L + 1 and its MLP stage 2L + 2. A node reads signals of earlier stages only:
- a table or counter goes into the mixer of the first layer after all its key, value,
  enable, clear, query and gate signals exist (all its heads in that one layer);
- a unit goes into the first MLP after its inputs exist;
and later when that layer's heads (key heads: every copy and segment of a table takes
one, with its value head) or MLP units are used up (list scheduling in topological
order). One unit per MLP is kept for the ledger's rebalancing.

Residual dims: dim 0 is the constant one, dims 1-4 the ledger's ballast. With
`reuse_dims`, a signal whose last reader has run is cancelled (one unit per dim adds
-x exactly) in the first MLP with spare units, and its dims go to signals born later;
without it every signal keeps its dims for good (more dims, fewer units).

The last layer is the all-zero full-attention layer transformers needs to cache the
stack: the last scheduled layer when it has no table (its MLP still computes), else an
extra layer.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from qgpu.circuit.ir import EMBED, MIXER, RAW, Circuit, Node, Signal
from qgpu.circuit.primitives import CircuitError

ONE = 0
BALLAST = [1, 2, 3, 4]
FIRST_FREE_DIM = 5
LEDGER_UNITS = 1  # the ledger's rebalancing unit in every MLP
TINY_BUDGET = 2.0 ** -25  # sum of squares of all raw dims must stay far below ulp(1)/2
NEVER = 10 ** 9


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
    cancels: dict[int, list[Signal]]  # layer -> signals cancelled in its MLP
    hidden: int
    mean: int
    embed_sumsq: int
    sumsq_after: list[int]  # non-ballast sum of squares after each layer's MLP
    order: list[Node] = field(default_factory=list)

    @property
    def one(self) -> int:
        return ONE

    @property
    def ballast(self) -> list[int]:
        return list(BALLAST)

    def nodes_at(self, layer: int, sublayer: str) -> list[Node]:
        return [n for n in self.order if self.layer.get(n) == layer and n.sublayer == sublayer]

    def live_at(self, s: int) -> list[Signal]:
        """Signals holding their dims at stage s (born before, not yet cancelled)."""
        gone = {sig: 2 * L + 2 for L, sigs in self.cancels.items() for sig in sigs}
        return [sig for sig in self.dims if self.birth[sig] < s <= gone.get(sig, NEVER)]


def schedule(circuit: Circuit, shape: LayerShape, reuse_dims: bool = True) -> Plan:
    circuit.validate()
    shape.validate()
    if circuit.conv_window != shape.conv:
        raise CircuitError(f"circuit uses a conv window of {circuit.conv_window}, "
                           f"the layer shape {shape.conv}")
    order = circuit.topological()
    budget = shape.mlp - LEDGER_UNITS
    ready: dict[Signal, int] = {}
    layer: dict[Node, int] = {}
    heads: dict[Node, list[int]] = {}
    units: dict[int, int] = {}
    heads_used: dict[int, int] = {}
    for node in order:
        p = max((ready[r.signal] for r in node.inputs()), default=0)
        cost = node.cost(shape)
        if node.sublayer == EMBED:
            at = -1
        elif node.sublayer == MIXER:
            if cost > shape.key_heads:
                raise CircuitError(f"{node.name} needs {cost} heads, a layer has "
                                   f"{shape.key_heads}")
            at = (p + 1) // 2
            while heads_used.get(at, 0) + cost > shape.key_heads:
                at += 1
            first = heads_used.get(at, 0)
            heads[node] = list(range(first, first + cost))
            heads_used[at] = first + cost
        else:
            if cost > budget:
                raise CircuitError(f"{node.name} needs {cost} MLP units, a layer has {budget}")
            at = p // 2
            while units.get(at, 0) + cost > budget:
                at += 1
            units[at] = units.get(at, 0) + cost
        layer[node] = at
        for sig in node.outputs:
            ready[sig] = stage(node.sublayer, at)
    for sig in circuit.output_signals():
        if sig not in ready:
            raise CircuitError(f"output signal {sig.name} is not produced")

    compute = max([at + 1 for at in layer.values()], default=0)
    has_mixer = {layer[n] for n in order if n.sublayer == MIXER}
    if compute and compute - 1 not in has_mixer:
        attention, n_layers = compute - 1, compute
    else:
        attention, n_layers = compute, compute + 1

    last_use = {sig: ready[sig] for sig in ready}
    for node in order:
        for ref in node.inputs():
            last_use[ref.signal] = max(last_use[ref.signal], stage(node.sublayer, layer[node]))
    for sig in circuit.output_signals():
        last_use[sig] = NEVER
    unit_list = [units.get(i, 0) for i in range(n_layers)]
    dims, cancels = _allocate(ready, last_use, unit_list, n_layers, budget, reuse_dims)
    raw_sumsq = sum(s.width * s.scale ** 2 for s in ready if s.kind == RAW)
    if raw_sumsq >= TINY_BUDGET:
        raise CircuitError(f"raw reads square-sum to {raw_sumsq:.3g}: too many to stay "
                           "norm-neutral")

    embed_sumsq = 1.0 + sum(s.sumsq for s in ready if ready[s] == 0)
    gone = {sig: L for L, sigs in cancels.items() for sig in sigs}
    sumsq_after = []
    for L in range(n_layers):
        live = [s for s in ready if ready[s] <= 2 * L + 2 and gone.get(s, NEVER) > L]
        sumsq_after.append(1.0 + sum(s.sumsq for s in live))
    for value in [embed_sumsq, *sumsq_after]:
        if value != int(value):
            raise CircuitError(f"a sum of squares {value} is not an integer: use integer "
                               "constants")
    hidden = max([d + 1 for ds in dims.values() for d in ds], default=FIRST_FREE_DIM)
    mean = 64
    while mean * hidden < max([embed_sumsq, *sumsq_after]) + 1:
        mean *= 4
    return Plan(circuit, shape, reuse_dims, layer, heads, n_layers, attention, unit_list,
                [heads_used.get(i, 0) for i in range(n_layers)], dims, ready, last_use,
                cancels, hidden, mean, int(embed_sumsq), [int(v) for v in sumsq_after], order)


def _allocate(birth: dict[Signal, int], last_use: dict[Signal, int], units: list[int],
              n_layers: int, budget: int, reuse: bool):
    """Residual dims per signal; with reuse, cancels dead signals where units are spare
    (mutates `units`) and hands their dims to signals born at later stages."""
    free: list[int] = []
    next_dim = FIRST_FREE_DIM
    dims: dict[Signal, list[int]] = {}
    cancels: dict[int, list[Signal]] = {}
    pending: list[Signal] = []
    by_birth: dict[int, list[Signal]] = {}
    for sig, s in birth.items():
        by_birth.setdefault(s, []).append(sig)
    for s in range(0, 2 * n_layers + 1):
        for sig in by_birth.get(s, []):
            picked = []
            for _ in range(sig.width):
                if free:
                    picked.append(heapq.heappop(free))
                else:
                    picked.append(next_dim)
                    next_dim += 1
            dims[sig] = sorted(picked)
            if reuse and last_use[sig] < NEVER:
                pending.append(sig)
        if reuse and s >= 2 and s % 2 == 0:  # the MLP of layer (s - 2) / 2
            L = (s - 2) // 2
            released, keep = [], []
            for sig in sorted(pending, key=lambda x: last_use[x]):
                if last_use[sig] <= s and birth[sig] < s and units[L] + sig.width <= budget:
                    units[L] += sig.width
                    cancels.setdefault(L, []).append(sig)
                    released += dims[sig]
                else:
                    keep.append(sig)
            pending = keep
            for d in released:
                heapq.heappush(free, d)
    return dims, cancels
