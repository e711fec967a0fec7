"""machine.memory: global and shared memory: the memory table, loads, the records of
stores, and the host's read-back of the final memory from the model's state.

- Table: rows = the 256 flat addresses (global words 0..127, then CTA c's shared word j
  at 128 + 32 c + j: `limits.model_flat_address`), 32 bits and a presence bit; written at the
  second V of every `ADDR(a) V V` record, the prompt's initial memory and the trace's
  store records alike (key: ADDR two tokens back, as 8 binary bits; value: the two V
  tokens). 256 rows are two banks of a head's 128 key channels (`ir.Table.banks`): each
  read is two heads whose outputs add into the same raw dims, the bank that does not
  hold the row reading exactly 0; the global words are bank 0 (the host reads them
  back from its first head). A word never written reads 0 (presence 0), so bit i is
  (raw_i + presence) / 2, linear (the atomics sum M's bits). One copy per stage holds
  that stage's loads and atomics' reads (two heads per lane and position), for both
  spaces: alu_low's word carries the space as bit 7 of the row.
- Address: the low 16 bits of a + offset (exact partial sum S < 2^17) decoded straight
  to the word one-hot in the ALU's low MLP: word w <=> S mod 2^16 in [4w, 4w + 4); the
  read lands in the next mixer, where the ALU's high MLP adds it to the result.
- Store records (protocol: per operation, each distinct word once, in lane order, with
  the value after the operation = the highest active lane's value for that word):
  lanes compare word numbers (linear in the one-hots), then valid(lane) = store, active,
  no lower active lane with the same word; value(lane) = b of the last active lane with
  its word. Each store position's records (valid, word, value x 4 lanes) are latched at
  EXEC and emitted after the register records: the k-th record (k = ADDR tokens since
  EXEC) is the valid (position, lane) of rank k. The same records serve st.shared (bit 7
  of the address: flat address 128 + w, machine.shared) and the atomics (the value after
  the word's last lane, machine.atomics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from qgpu.circuit.ir import BITS, BinaryKey, Circuit, Ref, Signal, Table
from qgpu.circuit.machine.alu import WORD_ADDRESS_BITS, WORD_SPACE
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping, TokenTable
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.circuit.machine.rom import Instruction
from qgpu.circuit.machine.spec import RECORD_OPS
from qgpu.errors import QgpuError
from qgpu.isa import limits
from qgpu.primitives import plus, scaled

WORD_BITS = 8  # a record's flat address: the word (7 bits), then bit 7 = shared (word + 128)


class MemoryTables:
    """The memory table's copies (all written by the same port)."""

    def __init__(self, c: Circuit, tt: TokenTable, bk: Bookkeeping):
        self.c, self.bk = c, bk
        self.key = address_key(tt, "addr")
        self.copies: list[Table] = []

    def loads(self, k: int, words: dict) -> dict:
        """{(p, lane): raw read} of the words `words[(p, lane)]` (alu_low's word: a flat
        row, valid -1: no access): 32 bits and presence, 0 unless a memory operation."""
        t = self.c.table(f"mem.stage{k}", rows=limits.MODEL_FLAT_WORDS, width=32, presence=True)
        t.write(self.key, [(self.bk.v_bits, 1), (self.bk.v_bits, 0)], key_lag=2)
        self.copies.append(t)
        return {pl: t.read(word_key(w), name=f"load.{pl[0]}.{pl[1]}", restore=False).raw
                for pl, w in words.items()}


def word_key(word: Signal) -> BinaryKey:
    """A memory-table query from alu_low's word signal: the flat row's bits are the word's
    7 bits and the space bit (bit 7), then valid."""
    return BinaryKey(Ref(word, (*range(WORD_ADDRESS_BITS), WORD_SPACE)),
                     word[WORD_ADDRESS_BITS])


def address_key(tt: TokenTable, name: str) -> BinaryKey:
    """The memory table's write key: an ADDR token's flat address (global words 0..127,
    shared 128 + 32 c + j) as 8 bits and a valid flag (from the embedding: 9 dims)."""
    def row(t):
        kind, f = tt.parsed[t]
        return f[0] if kind == "ADDR" and 0 <= f[0] < limits.MODEL_FLAT_WORDS else None

    bits = tt.c.token_bits(f"{name}.bits", WORD_BITS,
                           lambda t: row(t) if row(t) is not None else 0)
    valid = tt.c.token_flag(f"{name}.valid", lambda t: row(t) is not None)
    return BinaryKey(bits.ref, valid.ref)


@dataclass
class Records:
    bits: list[Signal]  # per position: restored latch: valid (4) | words (4 x 7) | values (4 x 32)


def _fields(lane: int) -> tuple[int, int, int]:
    """Offsets of lane's valid bit, word bits and value bits in a record latch."""
    return lane, LANES + WORD_BITS * lane, LANES + WORD_BITS * LANES + 32 * lane


RECORD_WIDTH = LANES * (1 + WORD_BITS + 32)


def store_records(c: Circuit, bk: Bookkeeping, i: Instruction, words: list[Signal],
                  values: list[Signal], atomic: list[Signal] | None = None) -> Signal:
    """The records of store or atomic position i (bits, layout `_fields`). words: per lane
    alu_low's word (7 bits, valid); values: per lane the b operand bits (a store's
    value); atomic: per lane the word's value after the lane's atomic (machine.atomics:
    -1 bits, the value 0, for every other operation), the value a record carries when
    that lane is the word's last."""
    p = i.position
    shared = [name for name in RECORD_OPS if ".shared" in name and i.has(name)]
    stores = [name for name in RECORD_OPS if name.startswith("st.") and i.has(name)]

    def number(ctx, lane):
        return ctx.num(words[lane], 0, WORD_ADDRESS_BITS)

    def same(ctx, outs):
        eq, word = outs
        k = 0
        for lane in range(LANES):
            for other in range(LANES):
                if other == lane:
                    continue
                d = plus(number(ctx, lane), scaled(number(ctx, other), -1))
                when = [ctx.v01(bk.cur_mask, other)]
                ctx.step(d, 0, true_bit(eq[k]), when=when, big=512.0)
                ctx.step(d, 1, {eq[k]: -2.0}, when=when, big=512.0)
                k += 1
            for b in range(WORD_BITS - 1):
                ctx.linear(ctx.v01(words[lane], b), {word[lane * WORD_BITS + b]: 2.0})
            if shared:
                ctx.linear(plus(*(ctx.v01(i.op(n)) for n in shared)),
                           {word[lane * WORD_BITS + WORD_BITS - 1]: 2.0})

    eq, word = unit(c, f"store.same.{p}", [*words, bk.cur_mask, i.ops],
                    [(f"store.same.{p}", BITS, LANES * (LANES - 1)),
                     (f"store.word.{p}", BITS, LANES * WORD_BITS)], same)

    def pair(lane, other):  # index of eq[lane, other]
        return lane * (LANES - 1) + (other if other < lane else other - 1)

    def last(ctx, outs):
        valid, lastw = outs
        en = plus(*(ctx.v01(i.op(n)) for n in RECORD_OPS if i.has(n))) or ctx.const(0)
        for lane in range(LANES):
            lower = plus(*(ctx.v01(eq, pair(lane, o)) for o in range(lane))) if lane else {}
            ctx.step(scaled(lower, -1), 0, true_bit(valid[lane]),
                     when=[en, ctx.v01(bk.cur_mask, lane)])
            for o in range(lane, LANES):  # o is the last active lane with lane's word
                hits = [ctx.v01(bk.cur_mask, lane) if o == lane else ctx.v01(eq, pair(lane, o))]
                higher = plus(*(ctx.v01(eq, pair(lane, h)) for h in range(o + 1, LANES))) \
                    if o + 1 < LANES else {}
                ctx.step(scaled(higher, -1), 0, true_bit(lastw[lane * LANES + o]), when=hits)

    valid, lastw = unit(c, f"store.last.{p}", [eq, i.ops, bk.cur_mask],
                        [(f"store.valid.{p}", BITS, LANES),
                         (f"store.last.{p}", BITS, LANES * LANES)], last)

    def record(ctx, outs):
        (r,) = outs
        for lane in range(LANES):
            v, w, x = _fields(lane)
            ctx.linear(ctx.v01(valid, lane), {r[v]: 2.0})
            for b in range(WORD_BITS):
                ctx.linear(ctx.v01(word, lane * WORD_BITS + b), {r[w + b]: 2.0})
            st = plus(*(ctx.v01(i.op(n)) for n in stores)) or ctx.const(0)
            for o in range(lane, LANES):
                for b in range(32):
                    ctx.step(ctx.v01(values[o], b), 1, true_bit(r[x + b]),
                             when=[ctx.v01(lastw, lane * LANES + o), st])
                    if atomic:
                        ctx.step(ctx.v01(atomic[o], b), 1, true_bit(r[x + b]),
                                 when=[ctx.v01(lastw, lane * LANES + o)])

    (rec,) = unit(c, f"store.record.{p}", [valid, word, lastw, i.ops, *values, *(atomic or [])],
                  [(f"store.record.{p}", BITS, RECORD_WIDTH)], record)
    return rec


def read_memory(compiled, state) -> list[int]:
    """The global memory words from the model's recurrent state (the memory table's rows:
    bit i stored as the pair (32 b, 32 (1 - b)) in columns 2i, 2i + 1; a row never written
    is all zero, the word 0)."""
    layer, head = memory_location(compiled)
    return decode_memory_rows(state.recurrent[layer][head, :limits.MODEL_GLOBAL_WORDS, :64])


def memory_location(compiled) -> tuple[int, int]:
    """(layer, value head) of the memory table whose rows hold global memory."""
    plan = compiled.plan
    table = next(n for n in plan.order if isinstance(n, Table) and n.name == "mem.stage0")
    rep = compiled.weights.config.value_heads_per_key_head
    return plan.layer[table], plan.heads[table][0] * rep


def decode_memory_rows(rows) -> list[int]:
    """Memory words from the memory table's rows (bit i as the pair (32 b, 32 (1 - b)) in
    columns 2i, 2i + 1; a row never written is 0); shared by every reader of the state."""
    words = []
    for a, row in enumerate(np.asarray(rows)):
        pairs = row.reshape(32, 2)
        if not np.any(pairs):
            words.append(0)
            continue
        ok = np.all(((pairs[:, 0] == 32) & (pairs[:, 1] == 0)) |
                    ((pairs[:, 0] == 0) & (pairs[:, 1] == 32)))
        if not ok:
            raise QgpuError(f"memory word {a} in the model's state is not a clean stored "
                            f"word: {row.tolist()}")
        words.append(int(sum(1 << b for b in range(32) if pairs[b, 0] == 32)))
    return words
