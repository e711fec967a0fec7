"""circuit.ir: the description a circuit compiler consumes (tracr's lesson: a compiler,
not hand-placed weights).

A `Circuit` is a graph of named *signals* (residual-stream slots with an encoding) and
the *nodes* that produce them:
- token inputs: signals the embedding defines, a function token id -> value;
- tables (`Table`): Gated DeltaNet state regions with one write port and any number of
  read ports (each read is a copy of the table in its own head, all written together);
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

Nothing here knows about layers or dimensions: `schedule` places nodes, `emit` writes the
weights.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from qgpu.primitives import CircuitError, Form, MlpWriter
from qgpu.primitives.mlp import step

BITS, ONEHOT, CONST, RAW = "bits", "onehot", "const", "raw"
EMBED, MIXER, MLP = "embed", "mixer", "mlp"

READ_SCALE = 2.0 ** -20  # raw table reads land as +-2^-20 (squares 2^-40: norm-neutral)
COUNTER_SCALE = 2.0 ** -14  # a counter read lands as 2^-14 * 2^-n
# A binary key's channels: BINARY_STEP * S + BINARY_OFFSET for its match score S (1 for the
# named row, <= -1 for the others): 48 (as primitives.gdn_memory.KEY: l2norm(48 e_r) == e_r
# in transformers' and llama.cpp's formulas; 128 is not exact in llama.cpp's) and <= -208,
# below SiLU's exact-zero threshold (-104) in every executor.
BINARY_STEP, BINARY_OFFSET = 128.0, -80.0
BINARY_KEY = BINARY_STEP + BINARY_OFFSET   # 48


@dataclass(eq=False)
class Signal:
    """A named group of residual dims. `producer` is the node that writes it."""

    name: str
    kind: str
    width: int
    producer: Node | None = None
    members: int = 0  # ONEHOT: real members (the none dim, if any, is the last dim)
    has_none: bool = False
    values: tuple[float, ...] = ()  # CONST
    scale: float = 1.0  # RAW: +-scale per bit

    @property
    def sumsq(self) -> float:
        """The data-independent sum of squares this signal adds to the residual."""
        if self.kind == BITS:
            return float(self.width)
        if self.kind == ONEHOT:
            return 1.0
        if self.kind == CONST:
            return float(sum(v * v for v in self.values))
        return 0.0  # RAW: below half an ulp of any norm's sum (see READ_SCALE)

    @property
    def ref(self) -> Ref:
        return Ref(self, tuple(range(self.width)))

    def __getitem__(self, index) -> Ref:
        return self.ref[index]

    def __len__(self) -> int:
        return self.width

    def member(self, index: int) -> Ref:
        """The 0/1 dim of one member of a one-hot group (index -1: the none member)."""
        if self.kind != ONEHOT:
            raise CircuitError(f"{self.name} is not a one-hot group")
        if index == -1:
            if not self.has_none:
                raise CircuitError(f"{self.name} has no none member")
            index = self.members
        return Ref(self, (index,))

    def __repr__(self) -> str:
        return f"Signal({self.name}, {self.kind}, {self.width})"


@dataclass(frozen=True, eq=False)
class Ref:
    """A selection of a signal's dims (a bit range, one member)."""

    signal: Signal
    offsets: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, index) -> Ref:
        picked = self.offsets[index]
        return Ref(self.signal, picked if isinstance(picked, tuple) else (picked,))

    @property
    def kind(self) -> str:
        return self.signal.kind

    @property
    def ref(self) -> Ref:
        return self

    def describe(self) -> str:
        if len(self.offsets) == self.signal.width:
            return self.signal.name
        if len(self.offsets) == 1:
            return f"{self.signal.name}[{self.offsets[0]}]"
        return f"{self.signal.name}[{self.offsets[0]}:{self.offsets[-1] + 1}]"


Source = Signal | Ref


def as_ref(x: Source) -> Ref:
    return x.ref


@dataclass(eq=False)
class Node:
    """Something the scheduler places: a token input, a table, a counter or a unit."""

    name: str
    sublayer: str  # EMBED, MIXER or MLP
    outputs: list[Signal] = field(default_factory=list)

    def inputs(self) -> list[Ref]:
        return []

    def cost(self, shape) -> int:
        return 0

    def describe(self) -> dict:
        return {"name": self.name, "type": type(self).__name__}


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


@dataclass(frozen=True, eq=False)
class BinaryKey:
    """A table key or query as a binary row number: `bits` (+-1, bit i of the row) and a
    `valid` bit (-1: no row). The emitter decodes it in the key (query) projection
    itself: row r's channel is BINARY_STEP * S + BINARY_OFFSET with the match score
    S = sum_i s_ri x_i - (n - 1) + n (valid - 1): exactly BINARY_KEY (48) for the named
    row and <= -208 for every other (or for all when not valid), and the conv's SiLU makes
    that exactly (48, -0, ...): the same unit key as a one-hot's, from n + 1 residual dims
    instead of rows + 1."""

    bits: Ref
    valid: Ref

    def describe(self) -> str:
        return f"{self.bits.describe()} (binary, valid {self.valid.describe()})"


@dataclass(eq=False)
class Write:
    key: Ref | BinaryKey | int  # one-hot over the table's rows, a binary row, or a fixed row
    value: list[tuple[Ref, int]]  # (bits, conv lag 0..3) parts, in table bit order
    key_lag: int = 0
    enable: Ref | None = None  # a bit: +1 writes, -1 leaves the table untouched
    clear: Ref | None = None  # a bit: +1 empties every row before this token's write


@dataclass(eq=False)
class Read:
    query: Ref | BinaryKey | int  # one-hot over the rows, a binary row, or a fixed row
    query_lags: tuple[int, ...]  # the query is the sum of the token's and these lags'
    gate: Ref | None  # a bit: -1 makes the read 0
    raw: Signal
    bits: Signal
    found: Signal | None


def bits_per_head(value_dim: int) -> int:
    """Stored bits per table head: a pair of value columns per bit, and the last column
    for the norm ballast (primitives.gdn_memory)."""
    return value_dim // 2 - 1


@dataclass(eq=False)
class Table(Node):
    """A GDN state region: `rows` keys, `width` stored bits (+ a presence bit), one
    write port, one head per read per segment (a segment holds dv/2 bits) per bank (a
    bank holds dk rows)."""

    circuit: Circuit | None = None
    rows: int = 0
    width: int = 0
    presence: bool = False
    write_port: Write | None = None
    reads: list[Read] = field(default_factory=list)

    @property
    def stored_bits(self) -> int:
        return self.width + (1 if self.presence else 0)

    def segments(self, value_dim: int) -> int:
        """Heads per copy and bank: each holds `bits_per_head(value_dim)` stored bits."""
        return -(-self.stored_bits // bits_per_head(value_dim))

    def banks(self, key_dim: int) -> int:
        """Heads per copy and segment: bank b holds rows b * key_dim .. (b + 1) * key_dim - 1
        (more rows than a head's key channels need binary keys: each bank's head decodes
        its own rows, the others' key and query are 0, and a copy's banks add their reads
        into the same raw dims, all but one of them reading exactly 0)."""
        return -(-self.rows // key_dim)

    def cost(self, shape) -> int:
        return (max(1, len(self.reads)) * self.segments(shape.value_dim)
                * self.banks(shape.key_dim))

    def inputs(self) -> list[Ref]:
        refs = []
        w = self.write_port
        if w is not None:
            refs += [r for r, _ in w.value]
            refs += [x for x in (w.key, w.enable, w.clear) if isinstance(x, Ref)]
            if isinstance(w.key, BinaryKey):
                refs += [w.key.bits, w.key.valid]
        for r in self.reads:
            refs += [x for x in (r.query, r.gate) if isinstance(x, Ref)]
            if isinstance(r.query, BinaryKey):
                refs += [r.query.bits, r.query.valid]
        return refs

    # -- ports --
    def write(self, key: Source | int, value: Source | Sequence[tuple[Source, int]], *,
              key_lag: int = 0, enable: Source | None = None,
              clear: Source | None = None) -> None:
        """The write port: at tokens where `enable` is +1 (always, without it) row `key`
        gets `value`. value: bits, or (bits, lag) parts whose lag takes the bits of the
        token 1..3 positions back (conv taps); key_lag likewise for the key."""
        if self.write_port is not None:
            raise CircuitError(f"table {self.name} already has its write port")
        parts = ([(as_ref(value), 0)] if isinstance(value, Signal | Ref)
                 else [(as_ref(v), int(lag)) for v, lag in value])
        if sum(len(v) for v, _ in parts) != self.width:
            raise CircuitError(f"table {self.name}: value has "
                               f"{sum(len(v) for v, _ in parts)} bits, the table {self.width}")
        for v, lag in parts:
            _check_kind(v, BITS, f"table {self.name} value")
            self.circuit.check_lag(lag)
        self.circuit.check_lag(key_lag)
        key = self._key(key, "write key")
        for bit, what in ((enable, "enable"), (clear, "clear")):
            if bit is not None:
                _check_bit(as_ref(bit), f"table {self.name} {what}")
        self.write_port = Write(key, parts, key_lag, enable and as_ref(enable),
                                clear and as_ref(clear))

    def read(self, query: Source | int, *, lags: Sequence[int] = (0,),
             gate: Source | None = None, name: str | None = None,
             restore: bool = True) -> Read:
        """A read port (its own head per segment): row `query` as clean bits (`.bits`),
        and `.found` (+1 when the row was ever written) if the table has presence.
        restore=False leaves only the raw read (`.raw`) for a unit of the caller's that
        restores it (e.g. several exclusive reads combined in one step per bit).
        lags: the query is the sum of the query dims of these tokens back (0 = this one);
        the caller makes sure at most one of them names a row."""
        name = name or f"{self.name}.read{len(self.reads)}"
        for lag in lags:
            self.circuit.check_lag(lag)
        if gate is not None:
            _check_bit(as_ref(gate), f"{name} gate")
        query = self._key(query, "query")
        c = self.circuit
        raw = c._signal(f"{name}.raw", RAW, self.stored_bits, self, scale=READ_SCALE)
        read = Read(query, tuple(sorted(set(lags))), gate and as_ref(gate), raw, None, None)
        if restore:
            read.bits, read.found = restore_bits(c, raw, self.width, self.presence, name)
        self.reads.append(read)
        return read

    def _key(self, key, what: str):
        if isinstance(key, int):
            if not 0 <= key < self.rows:
                raise CircuitError(f"table {self.name}: {what} row {key} is not in "
                                   f"0..{self.rows - 1}")
            return key
        if isinstance(key, BinaryKey):
            _check_kind(key.bits, BITS, f"table {self.name} {what}")
            _check_bit(key.valid, f"table {self.name} {what} valid")
            if self.rows > 2 ** len(key.bits):
                raise CircuitError(f"table {self.name}: {what} {key.describe()} names "
                                   f"{2 ** len(key.bits)} rows of {self.rows}")
            return key
        key = as_ref(key)
        _check_kind(key, ONEHOT, f"table {self.name} {what}")
        if key.signal.members != self.rows or len(key) != key.signal.width:
            raise CircuitError(f"table {self.name}: {what} {key.describe()} has "
                               f"{key.signal.members} members for {self.rows} rows")
        return key

    def describe(self) -> dict:
        w = self.write_port
        return {
            "name": self.name, "type": "table", "rows": self.rows, "width": self.width,
            "presence": self.presence,
            "write": None if w is None else {
                "key": _ref_id(w.key), "key_lag": w.key_lag,
                "value": [(_ref_id(v), lag) for v, lag in w.value],
                "enable": _ref_id(w.enable), "clear": _ref_id(w.clear)},
            "reads": [{"query": _ref_id(r.query), "lags": list(r.query_lags),
                       "gate": _ref_id(r.gate), "raw": r.raw.name} for r in self.reads],
        }


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


def _ref_id(ref) -> object:
    if ref is None or isinstance(ref, int):
        return ref
    if isinstance(ref, BinaryKey):
        return ["binary", _ref_id(ref.bits), _ref_id(ref.valid)]
    return [ref.signal.name, list(ref.offsets)]


def _check_kind(ref: Ref, kind: str, what: str) -> None:
    if ref.kind != kind:
        raise CircuitError(f"{what}: {ref.describe()} is {ref.kind}, needs {kind}")


def _check_bit(ref: Ref, what: str) -> None:
    _check_kind(ref, BITS, what)
    if len(ref) != 1:
        raise CircuitError(f"{what}: {ref.describe()} is {len(ref)} bits, needs one")


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
