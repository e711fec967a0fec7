"""examples.record_memory: the scale design's memory through records (docs/scale-design.md,
3.2) as a circuit of its own, to measure what kilobytes of memory cost before the machine
takes it in.

Tokens: `V(x)` (x a 16-bit value), `SADDR(a)` and `LADDR(a)` (a < words), `DONE`.
- A store is the record `SADDR(a) V(lo) V(hi)`: word a <- hi << 16 | lo. The write
  happens at `V(hi)`, its key two tokens back and the low half one back (conv lags), so
  nothing but the embedding feeds it.
- A load is `LADDR(a)`: the model answers `V(lo)` of word a; fed that token, it answers
  `V(hi)`. Every other position answers `DONE`. Words never stored read 0.
The memory is `ceil(words / rows_per_layer)` tables of up to one layer's heads each
(`rows_per_table`: 2,048 words at the Qwen3.5-2B shape), each row
one word, each table keyed by the address's low bits (`ir.BinaryKey`) and valid only for
its own high bits; a load's key comes from the `LADDR` token itself, so the reads need no
other layer's work and may sit in any layer with idle heads. Each table's read is
restored into the word right after it; the high half waits in a one-row latch for the next position.
"""

from __future__ import annotations

from qgpu.circuit import units
from qgpu.circuit.ir import BITS, BinaryKey, Circuit, make_unit
from qgpu.circuit.outputs import default_token, output_value
from qgpu.circuit.schedule import LayerShape
from qgpu.circuit.tables import bits_per_head
from qgpu.examples.demos import DemoError, Vocab
from qgpu.primitives.mlp import step

HALF = 16  # bits of a value token


def rows_per_table(shape: LayerShape) -> int:
    """Words one table holds in one layer's heads: a bank of key-dim rows per head, and
    as many heads per bank as a 32-bit word needs (one at value dim 128: 63 bits a row)."""
    segments = -(-2 * HALF // bits_per_head(shape.value_dim))
    if segments > shape.value_heads:
        raise DemoError(f"a word needs {segments} heads, a layer has {shape.value_heads}")
    return shape.key_dim * (shape.value_heads // segments)


def build_record_memory(words: int, shape: LayerShape) -> tuple[Circuit, Vocab]:
    """The circuit (not yet compiled) and its vocabulary for a memory of `words` words."""
    per_table = rows_per_table(shape)
    if not 1 <= words <= 2 ** HALF:
        raise DemoError(f"words must be in 1..{2 ** HALF} (16-bit addresses), not {words}")
    v = Vocab()
    v.add("V", 2 ** HALF)
    v.add("SADDR", words)
    v.add("LADDR", words)
    v.add("DONE")
    c = Circuit(f"record_memory_{words}", v.size)

    def parsed(t):
        return v.parse(t)

    def address(t):
        kind, index = parsed(t)
        return index[0] if kind in ("SADDR", "LADDR") else None

    value = c.token_bits("v.bits", HALF, lambda t: parsed(t)[1][0] if parsed(t)[0] == "V" else 0)
    low_bits = max(1, (per_table - 1).bit_length())
    row = c.token_bits("addr.row", low_bits,
                       lambda t: (address(t) or 0) % per_table)
    is_load = c.token_flag("is_load", lambda t: parsed(t)[0] == "LADDR")
    raws = []
    for j in range(-(-words // per_table)):
        rows = min(per_table, words - j * per_table)
        store_here = c.token_flag(f"store.t{j}", lambda t, j=j: parsed(t)[0] == "SADDR"
                                  and address(t) // per_table == j)
        load_here = c.token_flag(f"load.t{j}", lambda t, j=j: parsed(t)[0] == "LADDR"
                                 and address(t) // per_table == j)
        table = c.table(f"mem.t{j}", rows=rows, width=2 * HALF)
        key_bits = row[0:max(1, (rows - 1).bit_length())]
        table.write(BinaryKey(key_bits, store_here.ref), [(value, 1), (value, 0)], key_lag=2)
        raws.append(table.read(BinaryKey(key_bits, load_here.ref), restore=False,
                               name=f"load.t{j}").raw)
    word = _restore_chain(c, raws)
    latch = c.table("load.hi", rows=1, width=HALF)
    latch.write(0, word[HALF:], enable=is_load)
    high = latch.read(0, name="load.hi").bits
    after = c.table("after.load", rows=1, width=1)
    after.write(0, [(is_load, 1)])  # row 0: was the previous token a load?
    follows_load = after.read(0, name="after.load").bits
    half = units.mux2(c, is_load, word[0:HALF], high, name="load.half")
    answer = units.any_of(c, [is_load, follows_load], name="load.answer")
    output_value(c, half, [v.id("V", x) for x in range(2 ** HALF)], when=answer)
    default_token(c, v.id("DONE"))
    return c, v


def _restore_chain(c: Circuit, raws):
    """The word from several exclusive reads (at most one table holds a load's row, the
    others read exactly 0), restored table by table: word_j = word_{j-1} or table j's
    read, each bit a step on word_{j-1} + 2 raw_j / scale >= 1 (+-1 plus 0 or +-2), so
    each raw read lives only until the MLP after it instead of until the last table's."""
    word = None
    for j, raw in enumerate(raws):
        args = [raw] if word is None else [word, raw]

        def emit(mlp, dims, one, outs, raw=raw, previous=word):
            out = dims(outs[0].ref)
            for i, src in enumerate(dims(raw.ref)):
                form = {src: 1.0 / raw.scale}
                if previous is not None:   # +-1 + 2 * (0 or +-1): 1 when either is set
                    form = {src: 2.0 / raw.scale, dims(previous.ref)[i]: 1.0}
                step(mlp, form, 1.0, {out[i]: 2.0}, one, name=f"restore bit {i}")
            mlp.constant({d: -1.0 for d in out}, one)

        word = make_unit(c, f"load.word.t{j}", "restore", args,
                         [(f"load.word.t{j}", BITS, len(raw), {})], emit)[0]
    return word


def store(v: Vocab, address: int, word: int) -> list[int]:
    """The store record's tokens."""
    return [v.id("SADDR", address), v.id("V", word & 0xFFFF), v.id("V", word >> HALF)]


def load(v: Vocab, address: int, word: int) -> list[int]:
    """A load's record as the model writes it after `LADDR(a)`: its two value tokens."""
    return [v.id("LADDR", address), v.id("V", word & 0xFFFF), v.id("V", word >> HALF)]


def expected_answers(v: Vocab, tokens: list[int]) -> list[int]:
    """The oracle: the token the model must answer at every position."""
    memory: dict[int, int] = {}
    out, pending_high = [], None
    for i, t in enumerate(tokens):
        kind, index = v.parse(t)
        if kind == "V" and i >= 2 and v.parse(tokens[i - 2])[0] == "SADDR":
            memory[v.parse(tokens[i - 2])[1][0]] = index[0] << HALF | v.parse(tokens[i - 1])[1][0]
        if kind == "LADDR":
            word = memory.get(index[0], 0)
            out.append(v.id("V", word & 0xFFFF))
            pending_high = word >> HALF
        elif pending_high is not None:
            out.append(v.id("V", pending_high))
            pending_high = None
        else:
            out.append(v.id("DONE"))
    return out
