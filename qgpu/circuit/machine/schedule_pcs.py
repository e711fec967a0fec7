"""machine.schedule_pcs: lane PCs and the choice of the next EXEC (one warp).

Per lane a one-row table holds (pc, exited, waiting); never written it reads (0, 0, 0):
every lane starts at block 0, running. At END(t) each active lane's row is rewritten from
the terminator (block row, latched current block) and the token's own t: jmp -> target,
br -> target if the lane is in t else the other, bar -> target and waiting, exit ->
exited. At GO and at every END the rows are read back (write, then read, in one step) and
the machine's scheduling rule (docs/isa.md) is computed: a lane is running when it is
present, not exited and not waiting, or when it waits at the barrier and no lane runs
(the barrier of the one CTA releases: present - exited - waiting is a lane's 0/1 "runs
without waiting", so both cases are one step each); the active lanes are the running
lanes whose pc is not above any running lane's pc; the next block is their pc; no
running lane -> HALT. A released lane keeps its waiting bit until its next END rewrites
its row: all released lanes wait at the same target, so they run that block together.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.ir import BITS, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.circuit.machine.rom import BlockRow
from qgpu.circuit.primitives import plus, scaled

PC_BITS = 5
ROW = PC_BITS + 2  # pc | exited | waiting
EXITED, WAITING = PC_BITS, PC_BITS + 1
JMP, BR, BAR, EXIT = range(4)


@dataclass
class Scheduler:
    next_exec: Signal  # 11 bits: mask (4), warp (2), block (5): EXEC's index
    emit_exec: Signal
    halt: Signal


def scheduler(c: Circuit, bk: Bookkeeping, block: BlockRow) -> Scheduler:
    def new_pc(ctx, outs):
        pc, enable = outs
        kinds = block.kinds
        for lane in range(LANES):
            tk = ctx.v01(bk.end_taken, lane)
            not_tk = plus(ctx.const(1), scaled(tk, -1))
            for i in range(PC_BITS):
                d = pc[lane * ROW + i]
                ctx.step(ctx.v01(block.taken, i), 1, true_bit(d),
                         when=[plus(ctx.v01(kinds, JMP), ctx.v01(kinds, BAR))])
                ctx.step(plus(ctx.v01(block.taken, i), tk), 2, true_bit(d),
                         when=[ctx.v01(kinds, BR)])
                ctx.step(plus(ctx.v01(block.not_taken, i), not_tk), 2, true_bit(d),
                         when=[ctx.v01(kinds, BR)])
            ctx.step(ctx.v01(kinds, EXIT), 1, true_bit(pc[lane * ROW + EXITED]))
            ctx.step(ctx.v01(kinds, BAR), 1, true_bit(pc[lane * ROW + WAITING]))
            ctx.step(ctx.v01(bk.is_end), 1, true_bit(enable[lane]),
                     when=[ctx.v01(bk.cur_mask, lane)])

    pc_new, enable = unit(c, "pc.new", [block.kinds, block.taken, block.not_taken,
                                        bk.end_taken, bk.is_end, bk.cur_mask],
                          [("pc.new", BITS, LANES * ROW), ("pc.write", BITS, LANES)],
                          new_pc)
    pcs = []
    for lane in range(LANES):
        t = c.table(f"pc.{lane}", rows=1, width=ROW)
        t.write(0, pc_new[lane * ROW:(lane + 1) * ROW],
                enable=enable[lane])
        pcs.append(t.read(0, name=f"pc.{lane}").bits)

    def running(ctx, outs):
        (run,) = outs

        def free(lane):  # 1: present, not exited, not waiting (an absent lane's row is 0)
            return plus(ctx.v01(bk.present, lane), scaled(ctx.v01(pcs[lane], EXITED), -1),
                        scaled(ctx.v01(pcs[lane], WAITING), -1))

        for lane in range(LANES):
            ctx.step(free(lane), 1, true_bit(run[lane]))
            ctx.step(plus(ctx.v01(pcs[lane], WAITING),
                          *(scaled(free(o), -1) for o in range(LANES))), 1, true_bit(run[lane]))

    (run,) = unit(c, "lanes.running", [*pcs, bk.present], [("lanes.running", BITS, LANES)],
                  running)

    def compare(ctx, outs):
        le, anyrun = outs
        k = 0
        for lane in range(LANES):
            for other in range(LANES):
                if other != lane:  # pc_lane <= pc_other, or the other lane is not running
                    form = plus(ctx.num(pcs[other], 0, PC_BITS),
                                scaled(ctx.num(pcs[lane], 0, PC_BITS), -1),
                                scaled(plus(ctx.const(1), scaled(ctx.v01(run, other), -1)), 64))
                    ctx.step(form, 0, true_bit(le[k]))
                    k += 1
        ctx.step(ctx.sum01(run), 1, true_bit(anyrun[0]))

    le, anyrun = unit(c, "lanes.compare", [*pcs, run],
                      [("lanes.le", BITS, LANES * (LANES - 1)), ("lanes.any", BITS, 1)], compare)

    def active(ctx, outs):
        (act,) = outs
        for lane in range(LANES):
            ks = range(lane * (LANES - 1), (lane + 1) * (LANES - 1))
            ctx.step(plus(ctx.v01(run, lane), ctx.sum01(le, ks)), LANES, true_bit(act[lane]))

    (act,) = unit(c, "lanes.active", [run, le], [("lanes.active", BITS, LANES)], active)

    def first(ctx, outs):
        (f,) = outs
        for lane in range(LANES):
            ctx.step(plus(ctx.v01(act, lane), scaled(ctx.sum01(act, range(lane)), -1)), 1,
                     true_bit(f[lane]))

    (fst,) = unit(c, "lanes.first", [act], [("lanes.first", BITS, LANES)], first)

    def next_exec(ctx, outs):
        nxt, ex, halt = outs
        for lane in range(LANES):
            ctx.linear(ctx.v01(act, lane), {nxt[lane]: 2.0})
            for i in range(PC_BITS):
                ctx.step(plus(ctx.v01(fst, lane), ctx.v01(pcs[lane], i)), 2,
                         true_bit(nxt[6 + i]))
        sched = plus(ctx.v01(bk.is_go), ctx.v01(bk.is_end))
        ctx.step(sched, 1, true_bit(ex[0]), when=[ctx.v01(anyrun)])
        ctx.step(plus(sched, scaled(ctx.v01(anyrun), -1)), 1, true_bit(halt[0]))

    nxt, ex, halt = unit(c, "next_exec", [act, fst, *pcs, bk.is_go, bk.is_end, anyrun],
                         [("next_exec", BITS, 11), ("emit.exec", BITS, 1),
                          ("emit.halt", BITS, 1)], next_exec)
    return Scheduler(nxt, ex, halt)
