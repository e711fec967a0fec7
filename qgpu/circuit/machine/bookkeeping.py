"""machine.bookkeeping: what every position knows early: the token's own fields (the
embedding), the latches (current block, warp, active mask and barrier epoch written at
EXEC; the last non-V token's kind and register, written at every non-V token; the launch
configuration), the count of V tokens since the last non-V token, the lane order of the
active mask, and the launch's warp layout (`launch_layout`).

Lane order: the n-th value token after R(r) (n = 1, 2, ...) belongs to the
((n-1) // 2)-th active lane, half (n-1) % 2. `lane_order` gives e[L, j] = "lane L is the
j-th active lane" and popc[k] = "k lanes are active"; `value_slots` turns the counter into
which (lane, half) the *next* value token carries and whether the record is done.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit import units
from qgpu.circuit.ir import BITS, ONEHOT, BinaryKey, Circuit, Signal
from qgpu.circuit.machine.logic import true_bit, true_member, unit
from qgpu.circuit.machine.spec import MAX_RECORDS
from qgpu.isa import limits
from qgpu.primitives import plus, scaled
from qgpu.protocol.vocab import VOCAB_SIZE, fields_of

LANES = limits.LANES
WARP_BITS = 2  # warp numbers 0..MAX_WARPS-1; also CTA numbers (MAX_CTAS = 4)
EPOCH_BITS = 2  # EXEC's barrier epoch (protocol.vocab.EPOCHS = 4)
COUNT_LIMIT = 2 * LANES  # value tokens in one R record at most
BLOCK_BITS = limits.MODEL_BLOCK_BITS


def _parsed() -> list[tuple[str, tuple[int, ...]]]:
    return [fields_of(t) for t in range(VOCAB_SIZE)]


class TokenTable:
    """Builds embedding inputs (token flags and fields) from the parsed vocabulary."""

    def __init__(self, c: Circuit):
        self.c = c
        self.parsed = _parsed()

    def flag(self, name: str, *kinds: str) -> Signal:
        on = set(kinds)
        return self.c.token_flag(name, lambda t: self.parsed[t][0] in on)

    def not_flag(self, name: str, kind: str) -> Signal:
        return self.c.token_flag(name, lambda t: self.parsed[t][0] != kind)

    def field_bits(self, name: str, kind: str, index: int, width: int, offset: int = 0,
                   ) -> Signal:
        """Bits of field `index` (+ offset) of tokens of `kind`; 0 for other tokens."""
        def value(t):
            k, f = self.parsed[t]
            return f[index] + offset if k == kind else 0
        return self.c.token_bits(name, width, value)

    def field_onehot(self, name: str, kind: str, members: int, index: int = 0,
                     where: dict[int, int] | None = None) -> Signal:
        """One-hot of field `index` for tokens of `kind` whose other fields match `where`
        (field -> value); the none member for every other token and for field values
        beyond the members (ADDR of a shared word for the global memory table)."""
        where = where or {}

        def member(t):
            k, f = self.parsed[t]
            if k != kind or any(f[i] != v for i, v in where.items()) or f[index] >= members:
                return None
            return f[index]
        return self.c.token_onehot(name, members, member)

    def shared_field(self, kind: str, index: int, members: int, offset: int = 0) -> Signal:
        """The bits of field `index` (- offset) of `kind` tokens whose value lies in
        0..members-1 (0 for every other token): one embedding input shared by every
        late one-hot of that field (the match flags tell them apart), so that the
        embedding holds these dense +-1 columns once, not per key."""
        name = f"field.{kind}.{index}.{offset}.{members}"
        if name not in self.c.signals:
            bits = max(1, (members - 1).bit_length())

            def value(t):
                k, f = self.parsed[t]
                return f[index] - offset if k == kind and 0 <= f[index] - offset < members \
                    else 0
            self.c.token_bits(name, bits, value)
        return self.c.signals[name]

    def late_key(self, name: str, kind: str, members: int, after=(), index: int = 0,
                  where: dict[int, int] | None = None) -> BinaryKey:
        """A binary write key (ir.BinaryKey) for field `index` of `kind` tokens whose other
        fields match `where`: the field's bits (`shared_field`, from the embedding, shared
        by every key of that field) and a valid bit: the match flag copied by a unit that
        waits for the signals `after` (it does not read them), so that the table (placed
        after its key exists) and its read's dims wait until shortly before their
        reader. log2(members) + 1 dims instead of a one-hot's members + 1."""
        where = where or {}

        def matches(t):
            k, f = self.parsed[t]
            return (k == kind and all(f[i] == v for i, v in where.items())
                    and 0 <= f[index] < members)

        field = self.shared_field(kind, index, members)
        flag = self.c.token_flag(f"{name}.match", matches)
        if not after:
            return BinaryKey(field.ref, flag.ref)

        def body(ctx, outs):
            (valid,) = outs
            ctx.step(ctx.v01(flag), 1, true_bit(valid[0]))

        (valid,) = unit(self.c, name, [flag, *after], [(name, BITS, 1)], body)
        return BinaryKey(field.ref, valid.ref)

    def late_onehot(self, name: str, kind: str, members: int, after=(), index: int = 0,
                    where: dict[int, int] | None = None, offset: int = 0) -> Signal:
        """`field_onehot`'s one-hot (of the field's value - offset), decoded by a unit
        from the field's bits (`shared_field`) and a match flag (a few dims from the
        embedding on) that waits for the signals `after` (which exist only shortly
        before the one-hot's reader; the unit does not read them), so that the wide
        one-hot lives for a layer instead of from the embedding on."""
        where = where or {}

        def matches(t):
            k, f = self.parsed[t]
            return (k == kind and all(f[i] == v for i, v in where.items())
                    and 0 <= f[index] - offset < members)

        field = self.shared_field(kind, index, members, offset)
        flag = self.c.token_flag(f"{name}.match", matches)

        def body(ctx, outs):
            (key,) = outs
            for m in range(members):
                ctx.step(*ctx.equals(field, m), true_member(key, m), when=[ctx.v01(flag)])

        (key,) = unit(self.c, name, [field, flag, *after],
                      [(name, ONEHOT, members)], body)
        return key


@dataclass
class Bookkeeping:
    is_v: Signal
    is_nonv: Signal
    is_exec: Signal
    is_r: Signal
    is_end: Signal
    is_go: Signal
    is_addr: Signal
    v_bits: Signal
    exec_block: BinaryKey  # the EXEC token's block as a binary row (valid: EXEC tokens)
    end_taken: Signal  # END(t)'s t
    cur_block: Signal  # latch: block of the last EXEC (bits)
    cur_mask: Signal  # latch: its active mask (bits)
    cur_warp: Signal  # latch: its warp (bits)
    cur_epoch: Signal  # latch: its barrier epoch (bits)
    cur_warp_onehot: Signal
    exec_warp_bits: Signal  # bits, EXEC tokens only: the token's own warp
    rec_is_r: Signal  # latch: the last non-V token was R
    rec_reg: Signal  # latch: its register (0 for other tokens)
    rec_is_addr: Signal  # latch: the last non-V token was ADDR
    rec_is_trap: Signal | None  # latch: the last non-V token was TRAP (machine.faults;
    # None in a machine without the fault detector)
    ntid: Signal  # latch: threads per CTA (the value n, bits)
    nctaid: Signal  # latch: CTAs (the value g, bits)
    count: Signal  # one-hot 0..COUNT_LIMIT: V tokens since the last non-V token
    records: Signal  # one-hot 0..MAX_RECORDS: ADDR tokens since the last EXEC
    cur_block_key: BinaryKey  # cur_block as the ROM block row's query (always valid)
    rec_reg_onehot: Signal
    lane_rank: Signal  # bits e[L * LANES + j]: lane L is the j-th active lane
    popc: Signal  # bits popc[k - 1]: k lanes active (k = 1..LANES)
    present: Signal  # bits present[w * LANES + L]: lane L of warp w exists
    per_cta: Signal  # one-hot k - 1: k warps per CTA (ceil(ntid / LANES))
    cur_cta: Signal  # bits: the current warp's CTA
    cur_warp_in_cta: Signal  # bits: the current warp's index in its CTA


def bookkeeping(c: Circuit, tt: TokenTable, traps: bool = False) -> Bookkeeping:
    is_v = tt.flag("is_v", "V")
    is_nonv = tt.not_flag("is_nonv", "V")
    is_exec = tt.flag("is_exec", "EXEC")
    is_r = tt.flag("is_r", "R")
    is_end = tt.flag("is_end", "END")
    is_go = tt.flag("is_go", "GO")
    is_ntid = tt.flag("is_ntid", "NTID")
    is_addr = tt.flag("is_addr", "ADDR")
    is_trap = tt.flag("is_trap", "TRAP") if traps else None
    v_bits = tt.field_bits("v", "V", 0, 16)
    exec_bits = tt.field_bits("exec.block_bits", "EXEC", 0, BLOCK_BITS)
    exec_block = BinaryKey(exec_bits.ref, is_exec.ref)
    exec_mask = tt.field_bits("exec.mask", "EXEC", 2, LANES)
    exec_warp_bits = tt.field_bits("exec.warp_bits", "EXEC", 1, WARP_BITS)
    exec_epoch = tt.field_bits("exec.epoch", "EXEC", 3, EPOCH_BITS)
    r_reg = tt.field_bits("r.reg", "R", 0, 4)
    end_taken = tt.field_bits("end.taken", "END", 0, LANES)
    ntid_value = tt.field_bits("ntid.value", "NTID", 0, 5, offset=1)
    grid_value = tt.field_bits("grid.value", "GRID", 0, 3, offset=1)

    cur = c.table("latch.exec", rows=1, width=BLOCK_BITS + LANES + WARP_BITS + EPOCH_BITS)
    cur.write(0, [(exec_bits, 0), (exec_mask, 0), (exec_warp_bits, 0), (exec_epoch, 0)],
              enable=is_exec)
    cur_read = cur.read(0, name="cur").bits
    rec = c.table("latch.record", rows=1, width=7 if traps else 6)
    rec.write(0, [(is_r, 0), (r_reg, 0), (is_addr, 0)] + ([(is_trap, 0)] if traps else []),
              enable=is_nonv)
    rec_read = rec.read(0, name="rec").bits
    launch = c.table("latch.launch", rows=1, width=8)
    launch.write(0, [(ntid_value, 0), (grid_value, 1)], enable=is_ntid)
    launch_read = launch.read(0, name="launch").bits
    count = c.counter("count", reset=is_nonv, tick=is_v, limit=COUNT_LIMIT)
    records = c.counter("records", reset=is_exec, tick=is_addr, limit=MAX_RECORDS)

    cur_block, cur_mask = cur_read[0:BLOCK_BITS], cur_read[BLOCK_BITS:BLOCK_BITS + LANES]
    cur_warp = cur_read[BLOCK_BITS + LANES:BLOCK_BITS + LANES + WARP_BITS]
    cur_epoch = cur_read[BLOCK_BITS + LANES + WARP_BITS:]
    cur_warp_onehot = units.decode(c, cur_warp, name="cur.warp_onehot")
    ntid, nctaid = launch_read[0:5], launch_read[5:8]
    # the ROM's block row is read at every position with the latched block as a binary
    # row (ROM_BLOCKS = 256 rows: a one-hot would hold 257 dims)
    cur_block_key = BinaryKey(cur_block, c.token_flag("always", lambda t: True).ref)
    rec_reg_onehot = units.decode(c, rec_read[1:5], name="rec.reg_onehot")

    def rank(ctx, outs):
        (e, pc) = outs
        for lane in range(LANES):  # [4 m_L + c_L >= j + 4] - [... >= j + 5] = [m_L, c_L == j]
            form = plus(ctx.sum01(cur_mask, range(lane)), scaled(ctx.v01(cur_mask, lane), 4))
            for j in range(LANES):
                ctx.step(form, j + 4, true_bit(e[lane * LANES + j]))
                ctx.step(form, j + 5, {e[lane * LANES + j]: -2.0})
        total = ctx.sum01(cur_mask)
        for k in range(1, LANES + 1):
            ctx.step(total, k, true_bit(pc[k - 1]))
            ctx.step(total, k + 1, {pc[k - 1]: -2.0})

    lane_rank, popc = unit(c, "lanes", [cur_mask], [("lane_rank", BITS, LANES * LANES),
                                                    ("popc", BITS, LANES)], rank)

    present, per_cta, cta, wic = launch_layout(c, ntid, nctaid, cur_warp_onehot)
    return Bookkeeping(is_v, is_nonv, is_exec, is_r, is_end, is_go, is_addr, v_bits,
                       exec_block, end_taken, cur_block, cur_mask, cur_warp, cur_epoch,
                       cur_warp_onehot, exec_warp_bits, rec_read[0:1],
                       rec_read[1:5], rec_read[5:6], rec_read[6:7] if traps else None,
                       ntid, nctaid, count, records,
                       cur_block_key, rec_reg_onehot, lane_rank, popc, present, per_cta,
                       cta, wic)


def launch_layout(c: Circuit, ntid: Signal, nctaid: Signal, cur_warp_onehot: Signal):
    """The launch's warps (docs/isa.md: k = ceil(n / LANES) warps per CTA, warp w is warp
    w mod k of CTA w // k, its lane L is thread LANES * (w mod k) + L): present[w, L]
    (the thread exists: w < g * k and its thread index < n), the one-hot of k, and the
    current warp's CTA and warp-in-CTA bits. Thermometers of n and g first, then each
    output is one exclusive case per k."""

    def thermometers(ctx, outs):
        nge, gge = outs
        for j in range(limits.MODEL_MAX_THREADS_PER_CTA):
            ctx.step(ctx.num(ntid), j + 1, true_bit(nge[j]))
        for j in range(limits.MODEL_MAX_CTAS):
            ctx.step(ctx.num(nctaid), j + 1, true_bit(gge[j]))

    nge, gge = unit(c, "launch.thermo", [ntid, nctaid],
                    [("launch.nge", BITS, limits.MODEL_MAX_THREADS_PER_CTA),
                     ("launch.gge", BITS, limits.MODEL_MAX_CTAS)], thermometers)

    def per_cta_is(ctx, k):  # 0/1 form: k warps per CTA (n in 4(k-1)+1 .. 4k)
        form = ctx.v01(nge, LANES * (k - 1))
        if k < limits.MODEL_MAX_WARPS:
            form = plus(form, scaled(ctx.v01(nge, LANES * k), -1))
        return form

    def layout(ctx, outs):
        present, per_cta, cta, wic = outs
        for k in range(1, limits.MODEL_MAX_WARPS + 1):
            ctx.step(per_cta_is(ctx, k), 1, true_member(per_cta, k - 1))
            for w in range(limits.MODEL_MAX_WARPS):
                if w // k < limits.MODEL_MAX_CTAS:
                    for lane in range(LANES):
                        ctx.step(plus(per_cta_is(ctx, k),
                                      ctx.v01(nge, LANES * (w % k) + lane),
                                      ctx.v01(gge, w // k)), 3,
                                 true_bit(present[w * LANES + lane]))
                for bits, value in ((cta, w // k), (wic, w % k)):
                    for i in range(WARP_BITS):
                        if value >> i & 1:
                            ctx.step(plus(per_cta_is(ctx, k),
                                          ctx.v01(cur_warp_onehot.member(w))), 2,
                                     true_bit(bits[i]))

    return tuple(unit(c, "launch.layout", [nge, gge, cur_warp_onehot],
                      [("present", BITS, limits.MODEL_MAX_WARPS * LANES),
                       ("per_cta", ONEHOT, limits.MODEL_MAX_WARPS),
                       ("cur.cta", BITS, WARP_BITS), ("cur.warp_in_cta", BITS, WARP_BITS)],
                      layout))

def value_slots(c: Circuit, bk: Bookkeeping) -> tuple[Signal, Signal]:
    """(next, done): next[L * 2 + h] = the next value token is lane L's half h (from the
    count n since R: index n + 1, active lane n // 2, half n % 2); done = this is the last
    value token of the record (n = 2 * active lanes)."""

    def body(ctx, outs):
        nxt, done = outs
        for lane in range(LANES):
            for h in range(2):
                for j in range(LANES):
                    ctx.step(ctx.v01(bk.count.member(2 * j + h)), 1, true_bit(nxt[2 * lane + h]),
                             when=[ctx.v01(bk.lane_rank, lane * LANES + j)])
        for k in range(1, LANES + 1):
            ctx.step(ctx.v01(bk.count.member(2 * k)), 1, true_bit(done[0]),
                     when=[ctx.v01(bk.popc, k - 1)])

    return tuple(unit(c, "value_slots", [bk.count, bk.lane_rank, bk.popc],
                      [("value.next", BITS, 2 * LANES), ("value.done", BITS, 1)], body))
