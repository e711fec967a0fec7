"""machine.schedule_pcs: lane PCs and the choice of the next EXEC (every warp, every CTA).

Per (warp w, lane L) a one-row table holds (pc, exited, bars): the lane's block, whether
it has exited, and how many barriers it has passed, mod 4. Never written it reads
(0, 0, 0): every lane starts at block 0. At END(t) the current warp's active lanes'
rows are rewritten from the terminator (block row, latched current block) and the
token's own t: jmp -> target, br -> target if the lane is in t else the other,
bar -> target and bars + 1, exit -> exited; bars = the latched EXEC's epoch e (+1 at a
barrier). A row can only change where its lane is active, so a lane's count is kept
instead of a "released" state, which would change for lanes of other warps.

At GO and at every END the rows are read back (write, then read, in one step) and the
scheduling rule of docs/isa.md is computed:
- alive: present (bookkeeping's launch layout) and not exited;
- running: alive, and no alive lane of its CTA has passed one barrier fewer (bars - 1
  mod 4). The running lanes of a CTA have passed exactly as many barriers as the CTA has
  released, a waiting lane one more; when the last running lane arrives, every alive
  lane has the same count and they all run (the release). Which warps share a CTA
  depends on k = warps per CTA (`per_cta`): one exclusive case per k;
- the lowest warp with a running lane runs; its active lanes are its running lanes
  whose pc is not above any of its running lanes' pc; the next EXEC carries their
  block, the warp, the mask and their bar count (the epoch); no running lane -> HALT.
Lanes of a CTA that wait at different barriers are the interpreter's fault; the machine
with the fault detector detects it (`machine.barriers`: TRAP instead of EXEC or HALT).
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.ir import BITS, Circuit, Signal
from qgpu.circuit.machine import barriers
from qgpu.circuit.machine.bookkeeping import EPOCH_BITS, LANES, WARP_BITS, Bookkeeping
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.circuit.machine.rom import BlockRow
from qgpu.isa import limits
from qgpu.primitives import plus, scaled

PC_BITS = limits.MODEL_BLOCK_BITS
ROW = PC_BITS + 1 + EPOCH_BITS  # pc | exited | bars
EXITED, BARS = PC_BITS, PC_BITS + 1
JMP, BR, BAR, EXIT = range(4)
WARPS = limits.MODEL_MAX_WARPS
EPOCHS = 1 << EPOCH_BITS
LANE_IDS = [(w, lane) for w in range(WARPS) for lane in range(LANES)]
# EXEC(b, w, m, e)'s packed index, low bits first: e | m | w | b
E_AT, M_AT, W_AT, B_AT = 0, EPOCH_BITS, EPOCH_BITS + LANES, EPOCH_BITS + LANES + WARP_BITS
EXEC_BITS = B_AT + PC_BITS


@dataclass
class Scheduler:
    next_exec: Signal  # EXEC_BITS bits: EXEC's packed index
    emit_exec: Signal
    halt: Signal
    barrier: barriers.BarrierDetector | None = None  # machine.barriers (traps=True)


def _new_rows(c: Circuit, bk: Bookkeeping, block: BlockRow):
    """Per lane the row its END writes (the same for every warp), and per (w, L) whether
    it is written (the current warp's active lanes, at END)."""

    def body(ctx, outs):
        pc, bars, enable = outs
        kinds = block.kinds
        for lane in range(LANES):
            tk = ctx.v01(bk.end_taken, lane)
            not_tk = plus(ctx.const(1), scaled(tk, -1))
            for i in range(PC_BITS):
                d = pc[lane * (PC_BITS + 1) + i]
                ctx.step(ctx.v01(block.taken, i), 1, true_bit(d),
                         when=[plus(ctx.v01(kinds, JMP), ctx.v01(kinds, BAR))])
                ctx.step(plus(ctx.v01(block.taken, i), tk), 2, true_bit(d),
                         when=[ctx.v01(kinds, BR)])
                ctx.step(plus(ctx.v01(block.not_taken, i), not_tk), 2, true_bit(d),
                         when=[ctx.v01(kinds, BR)])
            ctx.step(ctx.v01(kinds, EXIT), 1, true_bit(pc[lane * (PC_BITS + 1) + PC_BITS]))
        e0, e1, bar = ctx.v01(bk.cur_epoch, 0), ctx.v01(bk.cur_epoch, 1), ctx.v01(kinds, BAR)
        ctx.step(plus(e0, scaled(bar, -1)), 1, true_bit(bars[0]))  # e0 xor bar
        ctx.step(plus(bar, scaled(e0, -1)), 1, true_bit(bars[0]))
        ctx.step(plus(scaled(e1, 2), scaled(e0, -1), scaled(bar, -1)), 1,
                 true_bit(bars[1]))  # e1 xor (e0 and bar)
        ctx.step(plus(e0, bar, scaled(e1, -2)), 2, true_bit(bars[1]))
        for k, (w, lane) in enumerate(LANE_IDS):
            ctx.step(ctx.v01(bk.is_end), 1, true_bit(enable[k]),
                     when=[ctx.v01(bk.cur_mask, lane), ctx.v01(bk.cur_warp_onehot.member(w))])

    return unit(c, "pc.new", [block.kinds, block.taken, block.not_taken, bk.end_taken,
                              bk.is_end, bk.cur_mask, bk.cur_epoch, bk.cur_warp_onehot],
                [("pc.new", BITS, LANES * (PC_BITS + 1)), ("pc.bars", BITS, EPOCH_BITS),
                 ("pc.write", BITS, len(LANE_IDS))], body)


def scheduler(c: Circuit, bk: Bookkeeping, block: BlockRow, traps: bool = False) -> Scheduler:
    pc_new, bars_new, enable = _new_rows(c, bk, block)
    rows = []
    for k, (w, lane) in enumerate(LANE_IDS):
        t = c.table(f"pc.{w}.{lane}", rows=1, width=ROW)
        t.write(0, [(pc_new[lane * (PC_BITS + 1):(lane + 1) * (PC_BITS + 1)], 0),
                    (bars_new, 0)], enable=enable[k])
        rows.append(t.read(0, name=f"pc.{w}.{lane}").bits)

    def alive_at(ctx, outs):  # h[k * EPOCHS + v]: lane k is alive and has passed v bars
        (h,) = outs
        for k in range(len(LANE_IDS)):
            alive = plus(ctx.v01(bk.present, k), scaled(ctx.v01(rows[k], EXITED), -1))
            for v in range(EPOCHS):
                form, n = ctx.equals(rows[k][BARS:BARS + EPOCH_BITS], v)
                ctx.step(plus(alive, form), n + 1, true_bit(h[k * EPOCHS + v]))

    (h,) = unit(c, "lanes.alive", [*rows, bk.present],
                [("lanes.alive", BITS, len(LANE_IDS) * EPOCHS)], alive_at)
    bar = barriers.detect(c, bk, rows, h, PC_BITS, EPOCHS) if traps else None

    def running(ctx, outs):
        (run,) = outs
        for k, (w, _lane) in enumerate(LANE_IDS):
            for per_cta in range(1, WARPS + 1):
                cta = w // per_cta
                peers = [j for j, (x, _) in enumerate(LANE_IDS) if x // per_cta == cta]
                for v in range(EPOCHS):
                    behind = plus(*(ctx.v01(h, j * EPOCHS + (v - 1) % EPOCHS) for j in peers))
                    ctx.step(plus(scaled(ctx.v01(h, k * EPOCHS + v), 2),
                                  scaled(ctx.v01(bk.per_cta.member(per_cta - 1)), 2),
                                  scaled(behind, -1)), 4, true_bit(run[k]))

    (run,) = unit(c, "lanes.running", [h, bk.per_cta], [("lanes.running", BITS,
                                                          len(LANE_IDS))], running)

    def compare(ctx, outs):
        le, warp_any, anyrun = outs
        n = 0
        for w in range(WARPS):
            for lane in range(LANES):
                for other in range(LANES):
                    if other != lane:  # pc_lane <= pc_other, or the other lane is not running
                        o, s = rows[w * LANES + other], rows[w * LANES + lane]
                        form = plus(ctx.num(o, 0, PC_BITS), scaled(ctx.num(s, 0, PC_BITS), -1),
                                    scaled(plus(ctx.const(1), scaled(
                                        ctx.v01(run, w * LANES + other), -1)), 1 << PC_BITS))
                        ctx.step(form, 0, true_bit(le[n]))
                        n += 1
            ctx.step(ctx.sum01(run, range(w * LANES, (w + 1) * LANES)), 1,
                     true_bit(warp_any[w]))
        ctx.step(ctx.sum01(run), 1, true_bit(anyrun[0]))

    le, warp_any, anyrun = unit(
        c, "lanes.compare", [*rows, run],
        [("lanes.le", BITS, WARPS * LANES * (LANES - 1)), ("lanes.warp_any", BITS, WARPS),
         ("lanes.any", BITS, 1)], compare)

    def active(ctx, outs):
        (act,) = outs
        for k, (w, _lane) in enumerate(LANE_IDS):
            ks = range(k * (LANES - 1), (k + 1) * (LANES - 1))
            lower = scaled(ctx.sum01(warp_any, range(w)), -float(LANES))
            ctx.step(plus(ctx.v01(run, k), ctx.sum01(le, ks), lower), LANES,
                     true_bit(act[k]))

    (act,) = unit(c, "lanes.active", [run, le, warp_any],
                  [("lanes.active", BITS, len(LANE_IDS))], active)

    def first(ctx, outs):
        (f,) = outs
        for k, (w, _lane) in enumerate(LANE_IDS):
            ctx.step(plus(ctx.v01(act, k), scaled(ctx.sum01(act, range(w * LANES, k)), -1)),
                     1, true_bit(f[k]))

    (fst,) = unit(c, "lanes.first", [act], [("lanes.first", BITS, len(LANE_IDS))], first)

    def next_exec(ctx, outs):
        nxt, ex, halt = outs
        for k, (w, lane) in enumerate(LANE_IDS):  # exactly one warp has active lanes
            ctx.linear(ctx.v01(act, k), {nxt[M_AT + lane]: 2.0})
            for i in range(WARP_BITS):
                if w >> i & 1:
                    ctx.linear(ctx.v01(fst, k), {nxt[W_AT + i]: 2.0})
            for i in range(PC_BITS):
                ctx.step(plus(ctx.v01(fst, k), ctx.v01(rows[k], i)), 2, true_bit(nxt[B_AT + i]))
            for i in range(EPOCH_BITS):
                ctx.step(plus(ctx.v01(fst, k), ctx.v01(rows[k], BARS + i)), 2,
                         true_bit(nxt[E_AT + i]))
        sched = plus(ctx.v01(bk.is_go), ctx.v01(bk.is_end))
        if bar is None:
            ctx.step(sched, 1, true_bit(ex[0]), when=[ctx.v01(anyrun)])
            ctx.step(plus(sched, scaled(ctx.v01(anyrun), -1)), 1, true_bit(halt[0]))
        else:  # TRAP(barrier) instead of either
            trapped = ctx.v01(bar.trap)
            ctx.step(sched, 1, true_bit(ex[0]),
                     when=[ctx.v01(anyrun), plus(ctx.const(1), scaled(trapped, -1))])
            ctx.step(plus(sched, scaled(ctx.v01(anyrun), -1), scaled(trapped, -1)), 1,
                     true_bit(halt[0]))

    nxt, ex, halt = unit(c, "next_exec", [act, fst, *rows, bk.is_go, bk.is_end, anyrun,
                                          *([bar.trap] if bar else [])],
                         [("next_exec", BITS, EXEC_BITS), ("emit.exec", BITS, 1),
                          ("emit.halt", BITS, 1)], next_exec)
    return Scheduler(nxt, ex, halt, bar)
