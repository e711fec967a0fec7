"""circuit.signals: the vocabulary of a circuit's graph that every node kind shares:
encodings and sublayers, residual-stream signals and references to their dims, the node
base class, binary row keys, and the checks a port makes of what it is given. `circuit.ir`
(the graph: circuits, units, counters, token inputs) and `circuit.tables` (table nodes)
build on it, and `circuit.ir` re-exports every name."""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.primitives import CircuitError

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
