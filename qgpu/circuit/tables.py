"""circuit.tables: table nodes (Gated DeltaNet state regions: rows, stored bits and a
presence bit, one write port, read ports each in its own head) with their ports' records.
`circuit.ir`'s Circuit makes them (`Circuit.table`) and re-exports these names;
`emit_tables` writes their weights."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qgpu.circuit.signals import (
    BITS,
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
from qgpu.primitives import CircuitError


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

    circuit: Any = None  # the ir.Circuit that made it (not imported: ir imports this)
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
            read.bits, read.found = c.restore_bits(raw, self.width, self.presence, name)
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
