"""machine.emission: from a block's results to the trace tokens that carry them.

- Result queue: a table per instruction position P, rows = registers, one row of all
  lanes' 32-bit results (128 bits, two heads). At EXEC the table is cleared and row
  dst(P) written when P is the last writer of a writeback register (so exactly one table
  holds each writeback register's final value). Every later position reads row r of
  every table (r from the record latch); the reads of tables that do not hold r are 0,
  so one step per output bit restores their sum directly, gated by which (lane, half)
  comes next.
- Branch outcome: the condition register's value after the block (the result of its
  last writer in the block, else the register file), tested != 0 per active lane; latched
  at EXEC and emitted as END(t).
- Next token at EXEC and at the last value of an R record: R(next writeback register
  after r), else the first memory record's ADDR, else END(t); after a memory record the
  next record's ADDR or END(t) (machine.memory makes the records).
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit import units
from qgpu.circuit.ir import BITS, ONEHOT, READ_SCALE, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping
from qgpu.circuit.machine.logic import true_bit, true_member, unit
from qgpu.circuit.machine.memory import RECORD_WIDTH, WORD_BITS, _fields
from qgpu.circuit.machine.rom import BlockRow, Instruction
from qgpu.circuit.machine.spec import MAX_RECORDS
from qgpu.isa import limits
from qgpu.primitives import plus, scaled


@dataclass
class Emission:
    value: Signal  # 16 bits of the next value token
    emit_value: Signal
    next_reg: Signal  # one-hot register of the next R
    emit_r: Signal
    addr: Signal  # word bits of the next ADDR
    emit_addr: Signal
    taken_onehot: Signal  # one-hot END(t)
    emit_end: Signal


def queue_keys(c: Circuit, ins: list[Instruction], block: BlockRow) -> list[Signal]:
    """Per position: one-hot row dst(P) when P writes back its destination's final value."""
    n = len(ins)

    def pre(ctx, outs):
        wbsel, same = outs
        for a, i in enumerate(ins):
            for q in range(1, limits.REGS):
                ctx.step(ctx.v01(i.dst_onehot.member(q)), 1, true_bit(wbsel[a]),
                         when=[ctx.v01(block.wb, q)])
        k = 0
        for a in range(n):
            for b in range(a + 1, n):
                d = plus(ctx.num(ins[a].dst), scaled(ctx.num(ins[b].dst), -1))
                ctx.step(d, 0, true_bit(same[k]))
                ctx.step(d, 1, {same[k]: -2.0})
                k += 1

    pairs = n * (n - 1) // 2
    wbsel, same = unit(c, "queue.wbsel", [block.wb, *(i.dst_onehot for i in ins),
                                          *(i.dst for i in ins)],
                       [("queue.wbsel", BITS, n), ("queue.same", BITS, max(pairs, 1))], pre)
    keys = []
    index = {}
    k = 0
    for a in range(n):
        for b in range(a + 1, n):
            index[(a, b)] = k
            k += 1
    for a, i in enumerate(ins):
        def body(ctx, outs, a=a, i=i):
            (key,) = outs
            later = plus(*(ctx.v01(same, index[(a, b)]) for b in range(a + 1, n)))
            for q in range(1, limits.REGS):
                ctx.step(plus(ctx.v01(i.dst_onehot.member(q)), ctx.v01(wbsel, a),
                              scaled(later, -1)), 2, true_member(key, q))

        (key,) = unit(c, f"queue.key.{i.position}", [i.dst_onehot, wbsel, same],
                      [(f"queue.key.{i.position}", ONEHOT, limits.REGS)], body)
        keys.append(key)
    return keys


def branch_taken(c: Circuit, bk: Bookkeeping, ins: list[Instruction], block: BlockRow,
                 results: dict, conds: list) -> Signal:
    """Bits: lane L is active, the block ends in br and L's condition is non-zero."""
    n = len(ins)

    def writers(ctx, outs):
        (eqc,) = outs
        for a, i in enumerate(ins):
            d = plus(ctx.num(i.dst), scaled(ctx.num(block.cond), -1))
            ctx.step(d, 0, true_bit(eqc[a]))
            ctx.step(d, 1, {eqc[a]: -2.0})

    (eqc,) = unit(c, "cond.writers", [block.cond, *(i.dst for i in ins)],
                  [("cond.writers", BITS, n)], writers)

    def last(ctx, outs):
        (lw,) = outs
        for a in range(n):
            later = plus(*(ctx.v01(eqc, b) for b in range(a + 1, n)))
            ctx.step(plus(ctx.v01(eqc, a), scaled(later, -1)), 1, true_bit(lw[a]))
        ctx.step(scaled(ctx.sum01(eqc), -1), 0, true_bit(lw[n]))

    (lw,) = unit(c, "cond.last_writer", [eqc], [("cond.last_writer", BITS, n + 1)], last)

    # one bit per (position, lane) right after the result, so that the results need not
    # stay live until the last stage's result exists; the register read's bit as early
    nz = {}
    for lane in range(LANES):
        for a, i in enumerate(ins):
            nz[(a, lane)] = _nonzero(c, results[(i.position, lane)], f"{i.position}.{lane}")
        nz[(n, lane)] = _nonzero(c, conds[lane], f"reg.{lane}")

    def taken(ctx, outs):
        (t,) = outs
        for lane in range(LANES):
            for a in range(n + 1):
                ctx.step(plus(ctx.v01(lw, a), ctx.v01(nz[(a, lane)])), 2,
                         true_bit(t[lane]), when=[ctx.v01(block.kinds, 1),
                                                  ctx.v01(bk.cur_mask, lane)])

    (t,) = unit(c, "branch.taken", [lw, *nz.values(), block.kinds, bk.cur_mask],
                [("branch.taken", BITS, LANES)], taken)
    return t


def _nonzero(c: Circuit, bits: Signal, name: str) -> Signal:
    """One bit: some bit of `bits` is set."""

    def body(ctx, outs):
        (nz,) = outs
        ctx.step(ctx.sum01(bits), 1, true_bit(nz[0]))

    (nz,) = unit(c, f"cond.nonzero.{name}", [bits], [(f"cond.nonzero.{name}", BITS, 1)], body)
    return nz


def record_index(c: Circuit, bk: Bookkeeping, has_next: Signal, value_done: Signal):
    """(cases, k): cases = (the next token is a record's V(lo), its V(hi), the next
    record's ADDR or END); k[r] = the record concerned is the r-th of the block (n = ADDR
    tokens since EXEC: n - 1 at ADDR and its first V, n after the record or the
    registers)."""
    limit = MAX_RECORDS

    def body(ctx, outs):
        case, k = outs
        n = bk.records
        cnt = ctx.v01
        v_addr = [cnt(bk.is_v), cnt(bk.rec_is_addr)]
        no_more = plus(ctx.const(1), scaled(cnt(has_next), -1))
        after_regs = [[cnt(bk.is_exec), no_more],
                      [cnt(bk.is_v), cnt(bk.rec_is_r), cnt(value_done), no_more]]
        ctx.step(cnt(bk.is_addr), 1, true_bit(case[0]))
        ctx.step(cnt(bk.count.member(1)), 1, true_bit(case[1]), when=v_addr)
        ctx.step(cnt(bk.count.member(2)), 1, true_bit(case[2]), when=v_addr)
        for conds in after_regs:
            ctx.step(conds[0], 1, true_bit(case[2]), when=conds[1:])
        for r in range(limit + 1):
            if r < limit:
                ctx.step(cnt(n.member(r + 1)), 1, true_bit(k[r]), when=[cnt(bk.is_addr)])
                ctx.step(cnt(n.member(r + 1)), 1, true_bit(k[r]),
                         when=[*v_addr, cnt(bk.count.member(1))])
            ctx.step(cnt(n.member(r)), 1, true_bit(k[r]), when=[*v_addr, cnt(bk.count.member(2))])
            for conds in after_regs:
                ctx.step(cnt(n.member(r)), 1, true_bit(k[r]), when=conds)

    return unit(c, "records.index", [bk.records, bk.is_v, bk.rec_is_addr, bk.is_addr, bk.count,
                                     bk.is_exec, bk.rec_is_r, value_done, has_next],
                [("records.case", BITS, 3), ("records.k", BITS, limit + 1)], body)


def emission(c: Circuit, bk: Bookkeeping, ins: list[Instruction], block: BlockRow,
             results: dict, conds: list, value_next: Signal, value_done: Signal,
             records: list[Signal], trap_addrs: dict | None = None,
             trap: Signal | None = None, barrier=None) -> Emission:
    """trap_addrs (machine.faults): per position the faulting address (0 unless the
    block's first fault is there), latched with the position's records and emitted as
    the value tokens after TRAP; trap: +1 at an EXEC whose block faults (the R/ADDR/END
    rules are off there); barrier (machine.barriers' detector): its value is the value
    token's after a barrier's TRAP."""
    keys = queue_keys(c, ins, block)
    picked = None
    for i, key in zip(ins, keys, strict=True):
        q = c.table(f"queue.{i.position}", rows=limits.REGS, width=32 * LANES)
        q.write(key, [(results[(i.position, lane)], 0) for lane in range(LANES)],
                enable=bk.is_exec, clear=bk.is_exec)
        raw = q.read(bk.rec_reg_onehot, name=f"queue.{i.position}", restore=False).raw
        picked = _queue_pick(c, bk, i.position, raw, picked, value_next)
    latched, trapped = [], []
    for i, rec in zip(ins, records, strict=True):
        addr = (trap_addrs or {}).get(i.position)
        t = c.table(f"records.{i.position}", rows=1,
                    width=RECORD_WIDTH + (32 if addr is not None else 0))
        t.write(0, [(rec, 0)] + ([(addr, 0)] if addr is not None else []), enable=bk.is_exec)
        latched.append(t.read(0, name=f"records.{i.position}").bits)
        trapped.append(addr is not None)

    x, nxt, has = next_register(c, bk, block)
    case, k = record_index(c, bk, has, value_done)
    chosen = _records_chain(c, bk, latched, k, case, trapped if trap is not None else None,
                            barrier)

    def value(ctx, outs):
        v, addr = outs
        for b in range(16):  # an R record's value (queues) or a memory record's
            ctx.step(ctx.v01(picked, b), 1, true_bit(v[b]))
            ctx.step(ctx.v01(chosen, b), 1, true_bit(v[b]))
        for b in range(WORD_BITS):
            ctx.step(ctx.v01(chosen, 16 + b), 1, true_bit(addr[b]))

    v, addr = unit(c, "emit.value", [picked, chosen],
                   [("emit.value", BITS, 16), ("emit.addr", BITS, WORD_BITS)], value)
    has_k = chosen[16 + WORD_BITS]

    taken = branch_taken(c, bk, ins, block, results, conds)
    latch = c.table("latch.taken", rows=1, width=LANES)
    latch.write(0, taken, enable=bk.is_exec)
    taken_now = latch.read(0, name="taken").bits
    taken_onehot = units.decode(c, taken_now, name="taken.onehot")

    def flags(ctx, outs):
        ev, er, ea, ee = outs
        in_rec = [ctx.v01(bk.is_v), ctx.v01(bk.rec_is_r)]
        done, more = ctx.v01(value_done), ctx.v01(has)
        not_done = plus(ctx.const(1), scaled(done, -1))
        ok = [] if trap is None else [plus(ctx.const(1), scaled(ctx.v01(trap), -1))]
        ctx.step(ctx.v01(bk.is_r), 1, true_bit(ev[0]))
        ctx.step(not_done, 1, true_bit(ev[0]), when=in_rec)
        ctx.step(ctx.sum01(case, [0, 1]), 1, true_bit(ev[0]))
        if trap is not None:  # TRAP's address: V(lo) at TRAP, V(hi) at the V after it
            ctx.step(ctx.v01(bk.rec_is_trap), 1, true_bit(ev[0]))
        ctx.step(ctx.v01(bk.is_exec), 1, true_bit(er[0]), when=[more, *ok])
        ctx.step(done, 1, true_bit(er[0]), when=[*in_rec, more])
        ctx.step(ctx.v01(has_k), 1, true_bit(ea[0]), when=[ctx.v01(case, 2), *ok])
        ctx.step(plus(ctx.const(1), scaled(ctx.v01(has_k), -1)), 1, true_bit(ee[0]),
                 when=[ctx.v01(case, 2), *ok])

    extra = [] if trap is None else [trap, bk.rec_is_trap]
    ev, er, ea, ee = unit(c, "emit.flags", [bk.is_v, bk.rec_is_r, bk.is_r, bk.is_exec,
                                            value_done, has, case, has_k, *extra],
                          [("emit.v", BITS, 1), ("emit.r", BITS, 1), ("emit.addr_flag", BITS, 1),
                           ("emit.end", BITS, 1)], flags)
    return Emission(v, ev, nxt, er, addr, ea, taken_onehot, ee)


def _records_chain(c: Circuit, bk: Bookkeeping, latched: list[Signal], k: Signal,
                   case: Signal, trapped: list[bool] | None = None, barrier=None) -> Signal:
    """The block's k-th memory record (k: `record_index`), picked position by position so
    that each latched record (164 bits) is read in the MLP after its table and then
    freed, instead of all of them living to the last layer: per position a, `rank`
    counts down rem = k - (valid records before a) as a one-hot (negative: none) and
    marks the lane whose record is the k-th; `pick` adds that lane's fields for the
    token that comes next (case: V lo, V hi, ADDR). Output bits: value (16) | word
    (WORD_BITS) | found (the k-th record exists). trapped (machine.faults): which
    latches carry a faulting address after the records; after a TRAP token the chain
    takes its low half (at TRAP) or high half (at the V after it) instead. barrier
    (machine.barriers): the first pick adds its value where it is divergent (nothing
    else writes a value there), so that its bits die there instead of living to the
    last layer beside the chain's."""
    rem, chosen = k, None
    for a, lat in enumerate(latched):
        last = a == len(latched) - 1
        sel, rem = _records_rank(c, a, lat, rem, first=a == 0, last=last)
        chosen = _records_pick(c, a, lat, sel, case, chosen,
                               None if trapped is None else (bk, trapped[a]),
                               barrier if a == 0 else None)
    return chosen


def _records_rank(c: Circuit, a: int, lat: Signal, rem: Signal, first: bool, last: bool):
    members = MAX_RECORDS + 1
    big = 2.0 * LANES + 2  # the gating outweighs any count of valid lanes

    def body(ctx, outs):
        sel = outs[0]
        valid = [ctx.v01(lat, _fields(lane)[0]) for lane in range(LANES)]
        n = plus(*valid)
        for m in range(members):
            is_m = ctx.v01(rem, m) if first else ctx.v01(rem.member(m))
            for lane in range(LANES):
                before = plus(*valid[:lane]) if lane else {}
                when = [valid[lane], is_m]
                ctx.step(before, m, true_bit(sel[lane]), when=when, big=big)
                ctx.step(before, m + 1, {sel[lane]: -2.0}, when=when, big=big)
            if last:
                continue
            nxt = outs[1]
            for j in range(min(m, LANES) + 1):
                on = true_member(nxt, m - j)
                ctx.step(n, j, on, when=[is_m], big=big)
                ctx.step(n, j + 1, {d: -x for d, x in on.items()}, when=[is_m], big=big)

    outputs = [(f"records.sel.{a}", BITS, LANES)]
    if not last:
        outputs.append((f"records.rem.{a}", ONEHOT, members))
    sigs = unit(c, f"records.rank.{a}", [lat, rem], outputs, body)
    return sigs[0], (sigs[1] if not last else None)


def _records_pick(c: Circuit, a: int, lat: Signal, sel: Signal, case: Signal,
                  before: Signal | None, trap=None, barrier=None) -> Signal:
    width = 16 + WORD_BITS + 1

    def body(ctx, outs):
        (out,) = outs
        if barrier is not None:  # a divergent barrier's block (its TRAP's V tokens)
            for b in range(len(barrier.value)):
                ctx.step(plus(ctx.v01(barrier.value, b), ctx.v01(barrier.divergent)), 2,
                         true_bit(out[b]))
        if trap is not None and trap[1]:  # after TRAP (no record case is on there)
            bk = trap[0]
            half = [plus(ctx.const(1), scaled(ctx.v01(bk.is_v), -1)), ctx.v01(bk.is_v)]
            for h in range(2):
                for b in range(16):
                    ctx.step(ctx.v01(lat, RECORD_WIDTH + 16 * h + b), 1, true_bit(out[b]),
                             when=[ctx.v01(bk.rec_is_trap), half[h]])
        if before is not None:
            for b in range(width):
                ctx.step(ctx.v01(before, b), 1, true_bit(out[b]))
        for lane in range(LANES):
            _, w, val = _fields(lane)
            for h in range(2):
                for b in range(16):
                    ctx.step(ctx.v01(lat, val + 16 * h + b), 1, true_bit(out[b]),
                             when=[ctx.v01(sel, lane), ctx.v01(case, h)])
            for b in range(WORD_BITS):
                ctx.step(ctx.v01(lat, w + b), 1, true_bit(out[16 + b]),
                         when=[ctx.v01(sel, lane), ctx.v01(case, 2)])
            ctx.step(ctx.v01(sel, lane), 1, true_bit(out[16 + WORD_BITS]))

    extra = [trap[0].rec_is_trap, trap[0].is_v] if trap is not None and trap[1] else []
    extra += [barrier.value, barrier.divergent] if barrier is not None else []
    (out,) = unit(c, f"records.pick.{a}", [lat, sel, case, *([before] if before else []),
                                           *extra],
                  [(f"records.pick.{a}", BITS, width)], body)
    return out


def _queue_pick(c: Circuit, bk: Bookkeeping, p: int, raw: Signal, before: Signal | None,
                value_next: Signal) -> Signal:
    """The 16 bits of the next value token taken from the result queues up to position p:
    `before` (the queues before p) or queue p's read of the record's register, at the
    (lane, half) that comes next, in an R record (0 elsewhere). At most one queue holds
    the register (the others read 0), so a chain of these, one per queue, is the sum the
    value needs; each queue's 128-bit read lives for one layer, not to the end."""

    def body(ctx, outs):
        (out,) = outs
        for lane in range(LANES):
            for h in range(2):
                for b in range(16):
                    form = {ctx.d(raw)[lane * 32 + h * 16 + b]: 1.0 / READ_SCALE}
                    if before is not None:
                        form = plus(form, ctx.v01(before, b))
                    ctx.step(form, 1, true_bit(out[b]),
                             when=[ctx.v01(value_next, 2 * lane + h), ctx.v01(bk.rec_is_r)])

    (out,) = unit(c, f"queue.pick.{p}", [raw, *([before] if before is not None else []),
                                          value_next, bk.rec_is_r],
                  [(f"queue.pick.{p}", BITS, 16)], body)
    return out


def next_register(c: Circuit, bk: Bookkeeping, block: BlockRow):
    """(after, next, has_next): the writeback registers above the record latch's register,
    the lowest of them as a one-hot, and whether there is one."""

    def after(ctx, outs):
        (x,) = outs
        for q in range(1, limits.REGS):
            ctx.step(ctx.sum01(bk.rec_reg_onehot, range(q)), 1, true_bit(x[q]),
                     when=[ctx.v01(block.wb, q)])

    (x,) = unit(c, "wb.after", [bk.rec_reg_onehot, block.wb], [("wb.after", BITS, limits.REGS)],
                after)

    def first(ctx, outs):
        nxt, has = outs
        for q in range(1, limits.REGS):
            ctx.step(plus(ctx.v01(x, q), scaled(ctx.sum01(x, range(q)), -1)), 1,
                     true_member(nxt, q))
        ctx.step(ctx.sum01(x), 1, true_bit(has[0]))

    nxt, has = unit(c, "wb.next", [x], [("wb.next", ONEHOT, limits.REGS), ("wb.has_next", BITS, 1)],
                    first)
    return x, nxt, has
