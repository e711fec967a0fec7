"""examples.demos: small circuits written with the compiler, each with its token layout and
an oracle (the token the model must answer at every position). Used by the tests, the
benchmark and the generated part of docs/circuit.md; not the qgpu machine.

- register echo: SET(r, v) stores v in register r, GET(r) answers VAL(v) (EMPTY when r
  was never set), every other token answers OK;
- adder: a record REG(r) BYTE(lo) BYTE(hi) stores a 16-bit value (written at the hi byte:
  key from 2 tokens back, lo byte from 1 back); ADD(a, b) answers the low byte of
  r_a + r_b, and the position after it the high byte;
- counter: START opens a record and clears its slots; the n-th DATA(v) after it answers
  POS(n) and is stored in slot n (position from a 1 - 2^-n counter row); GET(i) answers
  VAL of the i-th item (EMPTY when the record has fewer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from qgpu.circuit import units
from qgpu.circuit.ir import Circuit
from qgpu.circuit.outputs import default_token, output_member, output_token, output_value
from qgpu.errors import QgpuError


class DemoError(QgpuError):
    """A token stream the demo's protocol does not define."""


@dataclass
class Vocab:
    """Named token ranges: vocab.id("SET", r, v), vocab.name(id)."""

    ranges: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)
    size: int = 0

    def add(self, name: str, *shape: int) -> None:
        count = 1
        for n in shape:
            count *= n
        self.ranges[name] = (self.size, shape)
        self.size += count

    def id(self, name: str, *index: int) -> int:
        base, shape = self.ranges[name]
        flat = 0
        for i, n in zip(index, shape, strict=True):
            if not 0 <= i < n:
                raise DemoError(f"{name}{index} is out of range")
            flat = flat * n + i
        return base + flat

    def parse(self, token: int) -> tuple[str, tuple[int, ...]]:
        for name, (base, shape) in self.ranges.items():
            count = 1
            for n in shape:
                count *= n
            if base <= token < base + count:
                flat, index = token - base, []
                for n in reversed(shape):
                    index.append(flat % n)
                    flat //= n
                return name, tuple(reversed(index))
        raise DemoError(f"token {token} is outside the vocabulary")

    def name(self, token: int) -> str:
        kind, index = self.parse(token)
        return kind + (f"({', '.join(map(str, index))})" if index else "")


@dataclass
class Demo:
    circuit: Circuit
    vocab: Vocab
    params: dict

    def answers(self, tokens: Sequence[int]) -> list[int]:
        """The token the model must answer after each of `tokens`."""
        return ORACLES[self.circuit.name](self, list(tokens))

    def continuation(self, prompt: Sequence[int], n: int) -> list[int]:
        """Greedy generation as the oracle sees it: each answer is fed back."""
        tokens, out = list(prompt), []
        for _ in range(n):
            out.append(self.answers(tokens)[-1])
            tokens.append(out[-1])
        return out

    def stream(self, n: int, seed: int = 0) -> list[int]:
        """A random well-formed token stream of at least n tokens."""
        return STREAMS[self.circuit.name](self, n, np.random.default_rng(seed))


# -- register echo --
def register_echo(registers: int = 8, bits: int = 4) -> Demo:
    v = Vocab()
    v.add("SET", registers, 2 ** bits)
    v.add("GET", registers)
    v.add("VAL", 2 ** bits)
    v.add("EMPTY")
    v.add("OK")
    c = Circuit("register_echo", v.size)

    def field_of(kind, pick):
        return lambda t: (pick(v.parse(t)[1]) if v.parse(t)[0] == kind else None)

    wkey = c.token_onehot("set.reg", registers, field_of("SET", lambda i: i[0]))
    wval = c.token_bits("set.value", bits, lambda t: field_of("SET", lambda i: i[1])(t) or 0)
    qkey = c.token_onehot("get.reg", registers, field_of("GET", lambda i: i[0]))
    is_get = c.token_flag("is_get", lambda t: v.parse(t)[0] == "GET")
    regs = c.table("registers", rows=registers, width=bits, presence=True)
    regs.write(wkey, wval)
    read = regs.read(qkey, name="get")
    hit = units.all_of(c, [is_get, read.found], name="get.hit")
    miss = units.threshold(c, [(is_get, 1.0), (read.found, -1.0)], 1.0, name="get.miss")
    output_value(c, read.bits, [v.id("VAL", x) for x in range(2 ** bits)], when=hit)
    output_token(c, v.id("EMPTY"), when=miss)
    default_token(c, v.id("OK"))
    return Demo(c, v, {"registers": registers, "bits": bits})


def _echo_oracle(demo: Demo, tokens: list[int]) -> list[int]:
    v, regs, out = demo.vocab, {}, []
    for t in tokens:
        kind, index = v.parse(t)
        if kind == "SET":
            regs[index[0]] = index[1]
            out.append(v.id("OK"))
        elif kind == "GET":
            out.append(v.id("VAL", regs[index[0]]) if index[0] in regs else v.id("EMPTY"))
        else:
            out.append(v.id("OK"))
    return out


# -- 16-bit adder --
def adder_machine(registers: int = 4) -> Demo:
    v = Vocab()
    v.add("REG", registers)
    v.add("BYTE", 256)
    v.add("ADD", registers, registers)
    v.add("OK")
    c = Circuit("adder", v.size)

    def kind(t):
        return v.parse(t)[0]

    def index(t):
        return v.parse(t)[1]

    reg = c.token_onehot("reg", registers, lambda t: index(t)[0] if kind(t) == "REG" else None)
    byte = c.token_bits("byte", 8, lambda t: index(t)[0] if kind(t) == "BYTE" else 0)
    is_byte = c.token_flag("is_byte", lambda t: kind(t) == "BYTE")
    is_add = c.token_flag("is_add", lambda t: kind(t) == "ADD")
    ra = c.token_onehot("add.a", registers, lambda t: index(t)[0] if kind(t) == "ADD" else None)
    rb = c.token_onehot("add.b", registers, lambda t: index(t)[1] if kind(t) == "ADD" else None)
    regs = c.table("registers", rows=registers, width=16)
    regs.write(reg, [(byte, 1), (byte, 0)], key_lag=2, enable=is_byte)
    a = regs.read(ra, lags=(0, 1), name="operand_a")
    b = regs.read(rb, lags=(0, 1), name="operand_b")
    history = c.table("previous", rows=1, width=1)  # the previous token's is_add
    history.write(0, [(is_add, 1)])
    prev_add = history.read(0, name="prev_is_add").bits
    total, _ = units.add(c, a.bits, b.bits, name="sum")
    out = units.mux2(c, is_add, total[0:8], total[8:16], name="out_byte")
    speak = units.any_of(c, [is_add, prev_add], name="speak")
    output_value(c, out, [v.id("BYTE", x) for x in range(256)], when=speak)
    default_token(c, v.id("OK"))
    return Demo(c, v, {"registers": registers})


def _adder_oracle(demo: Demo, tokens: list[int]) -> list[int]:
    v, regs, out = demo.vocab, {}, []
    parsed = [v.parse(t) for t in tokens]
    for t, (kind, index) in enumerate(parsed):
        prev = parsed[t - 1] if t >= 1 else ("", ())
        if t >= 2 and parsed[t - 2][0] == "REG" and kind == "BYTE":
            lo = prev[1][0] if prev[0] == "BYTE" else 0
            regs[parsed[t - 2][1][0]] = lo | index[0] << 8
        if kind == "ADD" and prev[0] == "ADD":
            raise DemoError("ADD right after ADD superposes two queries")
        add = index if kind == "ADD" else prev[1] if prev[0] == "ADD" else None
        if add is None:
            out.append(v.id("OK"))
            continue
        total = (regs.get(add[0], 0) + regs.get(add[1], 0)) & 0xFFFF
        out.append(v.id("BYTE", total & 0xFF if kind == "ADD" else total >> 8))
    return out


# -- counter --
def counter_record(slots: int = 6, bits: int = 4) -> Demo:
    v = Vocab()
    v.add("START")
    v.add("DATA", 2 ** bits)
    v.add("GET", slots)
    v.add("POS", slots + 2)  # POS(0..slots), then POS(slots + 1) = beyond the limit
    v.add("VAL", 2 ** bits)
    v.add("EMPTY")
    v.add("OK")
    c = Circuit("counter", v.size)

    def kind(t):
        return v.parse(t)[0]

    is_start = c.token_flag("is_start", lambda t: kind(t) == "START")
    is_data = c.token_flag("is_data", lambda t: kind(t) == "DATA")
    is_get = c.token_flag("is_get", lambda t: kind(t) == "GET")
    data = c.token_bits("data", bits, lambda t: v.parse(t)[1][0] if kind(t) == "DATA" else 0)
    query = c.token_onehot("get.slot", slots + 1,
                           lambda t: v.parse(t)[1][0] + 1 if kind(t) == "GET" else None)
    pos = c.counter("position", reset=is_start, tick=is_data, limit=slots)
    table = c.table("slots", rows=slots + 1, width=bits, presence=True)
    table.write(pos, data, enable=is_data, clear=is_start)
    read = table.read(query, name="get")
    hit = units.all_of(c, [is_get, read.found], name="get.hit")
    miss = units.threshold(c, [(is_get, 1.0), (read.found, -1.0)], 1.0, name="get.miss")
    output_member(c, pos, [v.id("POS", n) for n in range(slots + 2)], when=is_data)
    output_value(c, read.bits, [v.id("VAL", x) for x in range(2 ** bits)], when=hit)
    output_token(c, v.id("EMPTY"), when=miss)
    default_token(c, v.id("OK"))
    return Demo(c, v, {"slots": slots, "bits": bits})


def _counter_oracle(demo: Demo, tokens: list[int]) -> list[int]:
    v, slots = demo.vocab, demo.params["slots"]
    n, table, out = None, {}, []
    for t in tokens:
        kind, index = v.parse(t)
        if kind == "START":
            n, table = 0, {}
            out.append(v.id("OK"))
        elif kind == "DATA":
            n = None if n is None else n + 1
            if n is not None and n <= slots:
                table[n] = index[0]
                out.append(v.id("POS", n))
            else:
                out.append(v.id("POS", slots + 1))
        elif kind == "GET":
            slot = index[0] + 1
            out.append(v.id("VAL", table[slot]) if slot in table else v.id("EMPTY"))
        else:
            out.append(v.id("OK"))
    return out


ORACLES = {"register_echo": _echo_oracle, "adder": _adder_oracle, "counter": _counter_oracle}
DEMOS = {"register_echo": register_echo, "adder": adder_machine, "counter": counter_record}


def _echo_stream(demo: Demo, n: int, rng) -> list[int]:
    v, regs, bits = demo.vocab, demo.params["registers"], demo.params["bits"]
    return [v.id("SET", int(rng.integers(regs)), int(rng.integers(2 ** bits)))
            if rng.random() < 0.4 else v.id("GET", int(rng.integers(regs))) for _ in range(n)]


def _adder_stream(demo: Demo, n: int, rng) -> list[int]:
    v, regs, out = demo.vocab, demo.params["registers"], []
    while len(out) < n:
        if rng.random() < 0.5:
            out += [v.id("REG", int(rng.integers(regs))), v.id("BYTE", int(rng.integers(256))),
                    v.id("BYTE", int(rng.integers(256)))]
        else:
            out += [v.id("ADD", int(rng.integers(regs)), int(rng.integers(regs))), v.id("OK")]
    return out


def _counter_stream(demo: Demo, n: int, rng) -> list[int]:
    v, slots, bits, out = demo.vocab, demo.params["slots"], demo.params["bits"], []
    while len(out) < n:
        r = rng.random()
        if r < 0.08:
            out.append(v.id("START"))
        elif r < 0.6:
            out.append(v.id("DATA", int(rng.integers(2 ** bits))))
        else:
            out.append(v.id("GET", int(rng.integers(slots))))
    return out


STREAMS = {"register_echo": _echo_stream, "adder": _adder_stream, "counter": _counter_stream}
