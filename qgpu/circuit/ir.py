"""circuit.ir: the description a circuit compiler consumes (tracr's lesson: a compiler,
not hand-placed weights).

A `Circuit` is a graph of named *signals* (residual-stream slots with an encoding) and
the *nodes* that produce them:
- token inputs: signals the embedding defines, a function token id -> value;
- tables (`Table`, `circuit.tables`): Gated DeltaNet state regions with one write port and
  any number of read ports (each read is a copy of the table in its own head, all written
  together);
- counters: a `1 - 2^-n` counter row (docs/design.md section 2) decoded to a one-hot position;
- units (`Unit`): SwiGLU pieces (steps, products, decoders, adders, ...), built by the
  helpers of `qgpu.circuit.units`;
- outputs: which signals decide which token (`qgpu.circuit.outputs`).

Encodings, chosen so that every signal's sum of squares is the same for every token at
every position (the norm ledger relies on it):
- BITS: one dim per bit holding -1 or +1;
- ONEHOT: `members` dims holding 0/1, plus one explicit "none" dim when the group may be
  empty, so that exactly one dim is 1;
- CONST: dims holding fixed values (the same for every token);
- RAW: read outputs of tables, +-scale per bit or 0 (unwritten row), with scale a power of
  two so small that they never change a norm (docs/circuit.md, "raw reads"); only the
  restore units that turn them into BITS read them.

Signals, references and the node base class are in `circuit.signals`; this module
re-exports them and the table nodes. Nothing here knows about layers or dimensions:
`schedule` places nodes, `emit` writes the weights.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from qgpu.circuit.signals import (  # noqa: F401 - re-exported: the graph's vocabulary
    BINARY_KEY,
    BINARY_OFFSET,
    BINARY_STEP,
    BITS,
    CONST,
    COUNTER_SCALE,
    EMBED,
    MIXER,
    MLP,
    ONEHOT,
    RAW,
    READ_SCALE,
    BinaryKey,
    Node,
    Ref,
    Signal,
    Source,
    _check_bit,
    _check_kind,
    _ref_id,
    as_ref,
)
from qgpu.circuit.tables import Read, Table, Write, bits_per_head  # noqa: F401 - re-exported
from qgpu.primitives import CircuitError, Form, MlpWriter
from qgpu.primitives.mlp import step


@dataclass(eq=False)
class TokenInput(Node):
    values: np.ndarray | None = None  # [vocab, width] float32

    def describe(self) -> dict:
        sig = self.outputs[0]
        values = np.ascontiguousarray(self.values, np.float32)  # by digest: a [vocab,
        # width] list made the cache key cost ~40 s (tolist and JSON) on the machine
        return {"name": self.name, "type": "token", "kind": sig.kind, "width": sig.width,
                "values": [list(values.shape),
                           hashlib.sha256(values.tobytes()).hexdigest()]}


@dataclass(eq=False)
class Counter(Node):
    """A `1 - 2^-n` counter row: a token with `reset` = +1 sets n = 0, one with `tick` =
    +1 (and no reset) adds 1; its output is the raw read 2^-14 * 2^-n."""

    reset: Ref | None = None
    tick: Ref | None = None
    limit: int = 0

    def inputs(self) -> list[Ref]:
        return [self.reset, self.tick]

    def cost(self, shape) -> int:
        return 1

    def describe(self) -> dict:
        return {"name": self.name, "type": "counter", "reset": _ref_id(self.reset),
                "tick": _ref_id(self.tick), "limit": self.limit}


EmitFn = Callable[..., None]


@dataclass(eq=False)
class Unit(Node):
    """SwiGLU units computing `outputs` from `args`. `emit(mlp, dims, one, outputs)` writes them
    through the primitives (dims maps a Ref to its residual dims); `params` says what it
    computes (for the doc and the cache key)."""

    op: str = ""
    args: list[Ref] = field(default_factory=list)
    params: dict = field(default_factory=dict)
    emit: EmitFn | None = None
    units: int = 0  # MLP units, counted by a dry run when the unit is created

    def inputs(self) -> list[Ref]:
        return list(self.args)

    def cost(self, shape) -> int:
        return self.units

    def describe(self) -> dict:
        return {"name": self.name, "type": "unit", "op": self.op,
                "args": [_ref_id(a) for a in self.args],
                "outputs": [s.name for s in self.outputs], "params": self.params}


class Circuit:
    """The graph of signals and nodes; the builder methods of `qgpu.circuit.units` and
    `qgpu.circuit.outputs` add to it."""

    def __init__(self, name: str, vocab_size: int, conv_window: int = 4):
        if vocab_size < 2:
            raise CircuitError("a circuit needs at least two tokens")
        self.name = name
        self.vocab_size = vocab_size
        self.conv_window = conv_window
        self.signals: dict[str, Signal] = {}
        self.nodes: list[Node] = []
        self.rules: list = []  # output rules (qgpu.circuit.outputs)
        self.default_token: int | None = None

    def check_lag(self, lag: int) -> None:
        if not 0 <= lag < self.conv_window:
            raise CircuitError(f"lag {lag} is outside the conv window 0..{self.conv_window - 1}")

    def _signal(self, name: str, kind: str, width: int, producer: Node, **extra) -> Signal:
        if name in self.signals:
            raise CircuitError(f"a signal named {name!r} already exists")
        if width < 1:
            raise CircuitError(f"signal {name!r} needs at least one dim")
        sig = Signal(name, kind, width, producer, **extra)
        self.signals[name] = sig
        producer.outputs.append(sig)
        return sig

    def add_node(self, node: Node) -> Node:
        if any(n.name == node.name for n in self.nodes):
            raise CircuitError(f"a node named {node.name!r} already exists")
        self.nodes.append(node)
        return node

    # -- token inputs --
    def _token_input(self, name: str, kind: str, table: np.ndarray, **extra) -> Signal:
        node = self.add_node(TokenInput(name, EMBED))
        node.values = np.asarray(table, np.float32).reshape(self.vocab_size, -1)
        return self._signal(name, kind, node.values.shape[1], node, **extra)

    def token_bits(self, name: str, width: int, value_of: Callable[[int], int]) -> Signal:
        """`width` +-1 bits (bit 0 first) holding value_of(token) for every token."""
        vals = np.empty((self.vocab_size, width), np.float32)
        for t in range(self.vocab_size):
            v = int(value_of(t))
            if not 0 <= v < 2 ** width:
                raise CircuitError(f"{name}: value {v} of token {t} does not fit {width} bits")
            vals[t] = [1.0 if v >> i & 1 else -1.0 for i in range(width)]
        return self._token_input(name, BITS, vals)

    def token_flag(self, name: str, predicate: Callable[[int], bool]) -> Signal:
        """One +-1 bit: +1 where predicate(token)."""
        return self.token_bits(name, 1, lambda t: 1 if predicate(t) else 0)

    def token_onehot(self, name: str, members: int,
                     index_of: Callable[[int], int | None]) -> Signal:
        """A one-hot group: member index_of(token), or the none member when it is None."""
        vals = np.zeros((self.vocab_size, members + 1), np.float32)
        for t in range(self.vocab_size):
            m = index_of(t)
            if m is None:
                vals[t, members] = 1.0
            elif not 0 <= m < members:
                raise CircuitError(f"{name}: member {m} of token {t} is not in 0..{members - 1}")
            else:
                vals[t, m] = 1.0
        return self._token_input(name, ONEHOT, vals, members=members, has_none=True)

    def token_const(self, name: str, values: Sequence[float]) -> Signal:
        """Dims holding the same small values for every token."""
        vals = np.tile(np.asarray(values, np.float32), (self.vocab_size, 1))
        return self._token_input(name, CONST, vals, values=tuple(float(v) for v in values))

    # -- state --
    def table(self, name: str, rows: int, width: int, presence: bool = False) -> Table:
        if rows < 1 or width < 1:
            raise CircuitError(f"table {name} needs rows and bits")
        return self.add_node(Table(name, MIXER, circuit=self, rows=rows, width=width,
                                   presence=presence))

    def restore_bits(self, raw: Signal, width: int, presence: bool, name: str):
        """A table read's restore unit (`restore_bits`; tables call it through here)."""
        return restore_bits(self, raw, width, presence, name)

    def counter(self, name: str, reset: Source, tick: Source, limit: int) -> Signal:
        """Position since the last reset: a one-hot over 0..limit plus none (beyond the
        limit, or never reset). limit <= 12 keeps every decoding threshold exact."""
        if not 0 <= limit <= 12:
            raise CircuitError(f"counter {name}: limit {limit} is not in 0..12")
        reset, tick = as_ref(reset), as_ref(tick)
        _check_bit(reset, f"counter {name} reset")
        _check_bit(tick, f"counter {name} tick")
        node = self.add_node(Counter(name, MIXER, reset=reset, tick=tick, limit=limit))
        raw = self._signal(f"{name}.raw", RAW, 1, node, scale=COUNTER_SCALE)
        return decode_counter(self, raw, limit, name)

    # -- graph --
    def producers(self) -> dict[Signal, Node]:
        return {s: s.producer for s in self.signals.values()}

    def consumers(self) -> dict[Signal, list[Node]]:
        out: dict[Signal, list[Node]] = {s: [] for s in self.signals.values()}
        for node in self.nodes:
            for ref in node.inputs():
                if node not in out[ref.signal]:
                    out[ref.signal].append(node)
        return out

    def output_signals(self) -> list[Signal]:
        seen: list[Signal] = []
        for rule in self.rules:
            for ref in rule.inputs():
                if ref.signal not in seen:
                    seen.append(ref.signal)
        return seen

    def topological(self) -> list[Node]:
        """Nodes in an order where every node follows the producers of its inputs."""
        order, state = [], {}

        def visit(node: Node, path: list[str]):
            if state.get(node) == 2:
                return
            if state.get(node) == 1:
                raise CircuitError("the circuit has a cycle: " + " -> ".join(path + [node.name]))
            state[node] = 1
            for ref in node.inputs():
                visit(ref.signal.producer, path + [node.name])
            state[node] = 2
            order.append(node)

        for node in self.nodes:
            visit(node, [])
        return order

    def describe(self) -> dict:
        """A canonical, JSON-able description (what the compile cache is keyed by)."""
        return {"name": self.name, "vocab": self.vocab_size,
                "nodes": [n.describe() for n in self.nodes],
                "rules": [r.describe() for r in self.rules], "default": self.default_token}

    def validate(self) -> None:
        for node in self.nodes:
            if isinstance(node, Table) and node.write_port is None:
                raise CircuitError(f"table {node.name} is never written")
            if isinstance(node, Table) and not node.reads:
                raise CircuitError(f"table {node.name} is never read")
        if self.default_token is None and not self.rules:
            raise CircuitError(f"circuit {self.name} has no outputs")
        self.topological()


# -- units the IR itself builds (restoring reads, decoding counters); circuit.units has
# the rest --
class _DryRun(MlpWriter):
    """An MlpWriter that only counts the units a unit's emit would place."""

    def __init__(self):
        super().__init__(weights=None, layer=-1)

    def unit(self, gate: Form, up: Form, down: Form) -> int:
        self.next_unit += 1
        return self.next_unit - 1


def _count_units(node: Unit) -> int:
    base: dict[Signal, int] = {}

    def fake_dims(ref: Ref) -> list[int]:
        start = base.setdefault(ref.signal, 1 + sum(s.width for s in base))
        return [start + o for o in ref.offsets]

    dry = _DryRun()
    node.emit(dry, fake_dims, 0, node.outputs)
    return dry.next_unit


def make_unit(c: Circuit, name: str, op: str, args: Sequence[Source],
              outputs: Sequence[tuple[str, str, int, dict]], emit, **params) -> list[Signal]:
    """Add a Unit node: outputs are (name, kind, width, extra Signal fields)."""
    node = c.add_node(Unit(name, MLP, op=op, args=[as_ref(a) for a in args], params=params,
                           emit=emit))
    sigs = [c._signal(n, kind, width, node, **extra) for n, kind, width, extra in outputs]
    node.units = _count_units(node)
    return sigs


def restore_bits(c: Circuit, raw: Signal, width: int, presence: bool, name: str):
    """RAW +-scale (or 0) -> clean +-1 bits: bit = [raw / scale >= 1]; an unwritten row
    reads 0 and restores as all -1 bits (value 0) with found = -1."""

    def emit(mlp, dims, one, outs):
        r, out = dims(raw.ref), [d for sig in outs for d in dims(sig.ref)]
        for i, (src, dst) in enumerate(zip(r, out, strict=True)):
            step(mlp, {src: 1.0 / raw.scale}, 1.0, {dst: 2.0}, one, name=f"restore bit {i}")
        mlp.constant({d: -1.0 for d in out}, one)

    outs = [(f"{name}.bits", BITS, width, {})]
    if presence:
        outs.append((f"{name}.found", BITS, 1, {}))
    sigs = make_unit(c, f"{name}.restore", "restore", [raw], outs, emit)
    return sigs[0], (sigs[1] if presence else None)


def decode_counter(c: Circuit, raw: Signal, limit: int, name: str) -> Signal:
    """Counter read 2^-14 * 2^-n -> one-hot n in 0..limit (none beyond or never reset).
    F = 2^(M - n), M = limit + 1, is an exact integer for n <= M and < 1 beyond, so the
    steps [F >= 2^(M - m)] = [n <= m] are exact; member m = [n <= m] - [n <= m - 1]."""
    top = limit + 1

    def emit(mlp, dims, one, outs):
        (r,) = dims(raw.ref)
        members = dims(outs[0].ref)
        form = {r: 2.0 ** top / raw.scale}
        for m in range(limit + 1):  # member m+1 (or none) loses what member m gains
            step(mlp, form, 2.0 ** (top - m), {members[m]: 1.0, members[m + 1]: -1.0}, one,
                 name=f"n <= {m}")
        mlp.constant({members[-1]: 1.0}, one)

    (pos,) = make_unit(c, f"{name}.decode", "counter decode", [raw],
                       [(name, ONEHOT, limit + 2, {"members": limit + 1, "has_none": True})],
                       emit, limit=limit)
    return pos
