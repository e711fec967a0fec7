"""circuit.placement: which layer each node of a circuit goes to, and in which MLP each
dead piece of a signal is cancelled (a list scheduler, layer by layer; `schedule` runs it
for a few priority settings and allocates the residual dims).

Liveness is tracked per *piece*: the dims of a signal that the same set of nodes read (a
bits or raw signal whose readers take different slices splits into several pieces; a
one-hot or constant group is one piece, so that every live set keeps a fixed sum of
squares). A piece is dead once all its readers are placed, and can be cancelled (one MLP
unit per dim, `schedule`) in the MLP of its last reader or any later one; its dims then go
to signals born later.

Per layer: the mixer takes the tables whose inputs exist, highest first (height: the
fewest stages from the node to the circuit's outputs), while key heads last; then the
MLP, whose units and cancels share `budget` units, in this order:
1. critical units: those whose slack (the latest stage that still meets a target of
   `target` layers, minus this stage) is at most `slack`, highest first;
2. cancels of dead pieces, widest first (they free dims: this is what keeps the residual
   narrow);
3. units that free more dims than they add (their inputs' pieces they are the last
   reader of, minus their outputs), best first, while `score` is set;
4. cancels made possible by 3., then every other ready unit that fits, highest first,
   then the cancels that still fit.
A unit that does not fit waits for a later layer. `target` trades layers for width: a
low target places the stages' units early (fewer layers, more live signals at once), a
high one gives cancels room first.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.ir import BITS, EMBED, MIXER, MLP, ONEHOT, RAW, Circuit, Node, Ref, Signal
from qgpu.primitives import CircuitError

NEVER = 10 ** 9
# stages from a node in one sublayer to the earliest reader in another (mixer of layer L
# is stage 2L + 1, its MLP 2L + 2)
GAP = {(MLP, MLP): 2, (MLP, MIXER): 1, (MIXER, MLP): 1, (MIXER, MIXER): 2,
       (EMBED, MIXER): 1, (EMBED, MLP): 2}


@dataclass
class Graph:
    """What every run of the list scheduler shares: order, readers, pieces, heights."""

    order: list[Node]
    index: dict[Node, int]
    pieces: dict[Signal, list[Ref]]
    reads: dict[Node, list[Ref]]  # the pieces a node reads
    readers: dict[Ref, int]  # how many nodes read a piece
    output: set[Ref]  # pieces the output rules read (never cancelled)
    height: dict[Node, int]
    asap_layers: int  # layers with unbounded heads and units
    asap: dict[Node, int]  # a node's stage with unbounded heads and units


def piece_sumsq(piece: Ref) -> float:
    sig = piece.signal
    if sig.kind == ONEHOT or len(piece) == sig.width:
        return sig.sumsq
    return float(len(piece)) if sig.kind != RAW else 0.0


def graph(circuit: Circuit, split: bool = True) -> Graph:
    order = circuit.topological()
    readers: dict[tuple[Signal, int], set[Node]] = {}
    for node in order:
        for ref in node.inputs():
            for o in ref.offsets:
                readers.setdefault((ref.signal, o), set()).add(node)
    outs: dict[Signal, set[int]] = {}
    for rule in circuit.rules:
        for ref in rule.inputs():
            outs.setdefault(ref.signal, set()).update(ref.offsets)
    pieces: dict[Signal, list[Ref]] = {}
    output: set[Ref] = set()
    count: dict[Ref, int] = {}
    reads: dict[Node, list[Ref]] = {n: [] for n in order}
    for node in order:
        for sig in node.outputs:
            groups: dict[tuple, list[int]] = {}
            whole = not split or sig.kind not in (BITS, RAW)
            for o in range(sig.width):
                if whole:
                    key = ()
                else:
                    key = (frozenset(readers.get((sig, o), ())), o in outs.get(sig, ()))
                groups.setdefault(key, []).append(o)
            pieces[sig] = []
            for offsets in groups.values():
                piece = Ref(sig, tuple(offsets))
                pieces[sig].append(piece)
                by = set().union(*(readers.get((sig, o), set()) for o in offsets))
                count[piece] = len(by)
                for n in sorted(by, key=order.index):
                    reads[n].append(piece)
                if any(o in outs.get(sig, ()) for o in offsets):
                    output.add(piece)
    index = {n: i for i, n in enumerate(order)}
    for n in reads:
        reads[n].sort(key=lambda p: (index[p.signal.producer], p.offsets))
    consumers: dict[Signal, set[Node]] = {}
    for node in order:
        for ref in node.inputs():
            consumers.setdefault(ref.signal, set()).add(node)
    height: dict[Node, int] = {}
    for node in reversed(order):
        height[node] = max((GAP[(node.sublayer, c.sublayer)] + height[c]
                            for sig in node.outputs for c in consumers.get(sig, ())),
                           default=0)
    ready: dict[Signal, int] = {}
    asap: dict[Node, int] = {}
    last = 0
    for node in order:
        p = max((ready[r.signal] for r in node.inputs()), default=0)
        at = {EMBED: 0, MIXER: (p + 1) // 2 * 2 + 1, MLP: p // 2 * 2 + 2}[node.sublayer]
        asap[node] = at
        last = max(last, at)
        for sig in node.outputs:
            ready[sig] = at
    return Graph(order, index, pieces, reads, count, output, height, (last + 1) // 2, asap)


@dataclass
class Placement:
    layer: dict[Node, int]  # -1 for token inputs
    heads: dict[Node, list[int]]
    born: dict[Signal, int]  # stage
    units: list[int]  # per layer, with cancels
    heads_used: list[int]
    cancels: dict[int, list[Ref]]


def place(g: Graph, shape, budget: int, reuse: bool, target: int, slack: int,
          score: int | None, cap: int | None = None, oldest: bool = False) -> Placement:
    """One run of the list scheduler (module doc); `score`: the least net number of dims a
    unit must free to go before the remaining units (None: no such pass); `cap`: a width
    the non-critical nodes keep to (a table or unit that adds dims waits while the live
    width plus its net new dims would pass it; critical ones go anyway); `oldest`: the
    remaining units go oldest first (earliest possible stage), not highest first, so that
    a stage's late units free its signals before the next stage's units fill the MLPs."""
    height, index = g.height, g.index
    left = dict(g.readers)
    born: dict[Signal, int] = {}
    pborn: dict[Ref, int] = {}
    layer: dict[Node, int] = {}
    heads: dict[Node, list[int]] = {}
    units: list[int] = []
    heads_used: list[int] = []
    cancels: dict[int, list[Ref]] = {}
    dead: list[Ref] = []  # pieces with no reader left, not cancelled yet
    width = 0  # dims of the pieces born and not cancelled

    def net(node: Node) -> int:
        """Dims a node adds less those it frees as the last reader."""
        freed = sum(len(p) for p in g.reads[node] if left[p] == 1 and p not in g.output)
        return sum(sig.width for sig in node.outputs) - freed

    def fits(node: Node, pending: int = 0) -> bool:
        if cap is None:
            return True
        grow = net(node)
        return grow <= 0 or width + pending + grow <= cap

    def settle(node: Node) -> None:
        for p in g.reads[node]:
            left[p] -= 1
            if left[p] == 0 and p not in g.output:
                dead.append(p)

    def birth(node: Node, s: int) -> None:
        nonlocal width
        for sig in node.outputs:
            width += sig.width
            born[sig] = s
            for p in g.pieces[sig]:
                pborn[p] = s
                if left[p] == 0 and p not in g.output:
                    dead.append(p)

    for node in g.order:
        if node.sublayer == EMBED:
            layer[node] = -1
            birth(node, 0)
    mixers = [n for n in g.order if n.sublayer == MIXER]
    mlps = [n for n in g.order if n.sublayer == MLP]
    for node in mlps:
        if node.cost(shape) > budget:
            raise CircuitError(f"{node.name} needs {node.cost(shape)} MLP units, a layer "
                               f"has {budget}")
    for node in mixers:
        if node.cost(shape) > shape.key_heads:
            raise CircuitError(f"{node.name} needs {node.cost(shape)} heads, a layer has "
                               f"{shape.key_heads}")

    def fill(s: int, ready: list[Node]) -> tuple[list[Node], list[Ref], int]:
        """The MLP at stage s: critical units, cancels, units that free dims, the rest."""
        used, placed, gone = 0, [], []
        pending = 0  # outputs of the units placed here, less the cancels

        def put(node: Node, forced: bool = False) -> None:
            nonlocal used, pending
            if used + node.cost(shape) <= budget and (forced or fits(node, pending)):
                used += node.cost(shape)
                pending += sum(sig.width for sig in node.outputs)
                placed.append(node)
                settle(node)

        def cancel() -> None:
            nonlocal used, pending, width
            if not reuse:
                return
            for p in sorted(dead, key=lambda p: (-len(p), pborn[p], index[p.signal.producer],
                                                 p.offsets)):
                if pborn[p] < s and used + len(p) <= budget:
                    used += len(p)
                    gone.append(p)
                    dead.remove(p)
                    width -= len(p)

        for node in ready:
            if 2 * target - height[node] - s <= slack:
                put(node, forced=True)
        cancel()
        while score is not None:
            best, best_key = None, None
            for node in ready:
                if node in placed or used + node.cost(shape) > budget:
                    continue
                freed = sum(len(p) for p in g.reads[node] if left[p] == 1 and p not in g.output)
                key = (freed - sum(sig.width for sig in node.outputs), height[node], -index[node])
                if best_key is None or key > best_key:
                    best, best_key = node, key
            if best is None or best_key[0] < score:
                break
            put(best)
        cancel()
        rest = sorted(ready, key=lambda n: (g.asap[n], -height[n], index[n])) if oldest else ready
        for node in rest:
            if node not in placed:
                put(node)
        cancel()
        return placed, gone, used

    L = 0
    while mixers or mlps:
        s = 2 * L + 1
        ready = [n for n in mixers if all(born.get(r.signal, NEVER) < s for r in n.inputs())]
        used, placed, pending = 0, [], 0
        for node in sorted(ready, key=lambda n: (-height[n], index[n])):
            cost = node.cost(shape)
            critical = 2 * target - height[node] - s <= slack
            if used + cost <= shape.key_heads and (critical or fits(node, pending)):
                pending += sum(sig.width for sig in node.outputs)
                heads[node], layer[node] = list(range(used, used + cost)), L
                used += cost
                placed.append(node)
                settle(node)
        for node in placed:
            mixers.remove(node)
            birth(node, s)
        heads_used.append(used)

        s = 2 * L + 2
        ready = [n for n in mlps if all(born.get(r.signal, NEVER) < s for r in n.inputs())]
        ready.sort(key=lambda n: (-height[n], index[n]))
        placed, gone, used = fill(s, ready)
        for node in placed:
            layer[node] = L
            mlps.remove(node)
            birth(node, s)
        units.append(used)
        if gone:
            cancels[L] = gone
        L += 1
    return Placement(layer, heads, born, units, heads_used, cancels)
