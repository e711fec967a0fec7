"""machine.barriers: the model detects a divergent barrier itself (the machine with the
fault detector, MachineSpec.detect_faults) and writes `TRAP(barrier, 0, 0) V(lo) V(hi)`
after the END that completes it, lo and hi the lowest and highest block the CTA's lanes
wait to continue at (docs/protocol.md, "Faults"; isa.faults).

The interpreter checks after every block: when no lane of the block's CTA runs any more
and some wait at a barrier, they are released, unless they wait at different barriers
(their PCs, the barriers' targets, differ): that is the fault. In the scheduler's terms
(machine.schedule_pcs: a lane's row holds its pc and its barrier count mod 4; the CTA
has released E = the latched EXEC's epoch), after the END's rows are written:
- `barrier.lanes` (per lane of the current warp's CTA, `barrier.cta`): waiting =
  alive with count E + 1, running = alive with count E;
- `barrier.span`: R = [no lane runs and one waits] (a release happens now), and per
  block t = 1..127 (2^pc_bits - 1) the number of waiting lanes at a pc >= t, and the
  number waiting (RAW dims: counts * 2^-44, exact, instead of 16 x 127 bits);
- `barrier.ends`: the highest waiting pc (its bits are a telescoping sum over the
  thermometer [count_t >= 1]) and the lowest ([count_t >= waiting]);
- `barrier.trap`: D = R and highest > lowest; `trap` = D at END (the TRAP rule's
  condition; EXEC and HALT are off there); `value` = the lowest block at the TRAP token
  and the highest at the V after it (the emission adds it to the value it writes when D,
  in the records chain's first pick: `emission._records_pick`).
At the TRAP and V tokens nothing the detector reads has changed since the END (rows are
written at END only, the latches at EXEC), so D and the blocks are the same there.
"""

from __future__ import annotations

from dataclasses import dataclass

from qgpu.circuit.ir import BITS, RAW, Circuit, Signal
from qgpu.circuit.machine.bookkeeping import LANES, Bookkeeping
from qgpu.circuit.machine.logic import true_bit, unit
from qgpu.isa import limits
from qgpu.primitives import plus, scaled

WARPS = limits.MODEL_MAX_WARPS
COUNT_UNIT = 2.0 ** -44  # a count of lanes in a RAW dim: count * COUNT_UNIT, exact (the
# machine's RAW grid, as multiply.UNIT: analysis.suite_margins checks it)


@dataclass
class BarrierDetector:
    trap: Signal  # +1 at an END after which the CTA's lanes wait at different barriers
    divergent: Signal  # D (also at the TRAP and V tokens after that END)
    value: Signal  # the block's bits (pc_bits; the value's higher bits are 0): the lowest
    # waiting block at TRAP, the highest at the V after


def _same_cta(c: Circuit, bk: Bookkeeping) -> Signal:
    """barrier.cta: bit w = warp w is in the current warp's CTA (k = warps per CTA)."""

    def body(ctx, outs):
        (same,) = outs
        for w in range(WARPS):
            for per_cta in range(1, WARPS + 1):
                group = [x for x in range(WARPS) if x // per_cta == w // per_cta]
                cur = plus(*(ctx.v01(bk.cur_warp_onehot.member(x)) for x in group))
                ctx.step(plus(cur, ctx.v01(bk.per_cta.member(per_cta - 1))), 2,
                         true_bit(same[w]))

    (same,) = unit(c, "barrier.cta", [bk.cur_warp_onehot, bk.per_cta],
                   [("barrier.cta", BITS, WARPS)], body)
    return same


def detect(c: Circuit, bk: Bookkeeping, rows: list[Signal], alive: Signal, pc_bits: int,
           epochs: int) -> BarrierDetector:
    """rows: per (warp, lane) the scheduler's row (pc bits first); alive[k * epochs + v]:
    lane k is alive and has passed v barriers (mod epochs)."""
    lanes = WARPS * LANES
    same = _same_cta(c, bk)

    def lane_states(ctx, outs):
        wait, run = outs
        for k in range(lanes):
            in_cta = ctx.v01(same, k // LANES)
            for v in range(epochs):
                h = ctx.v01(alive, k * epochs + v)
                for out, e in ((wait, (v - 1) % epochs), (run, v)):
                    form, n = ctx.equals(bk.cur_epoch, e)  # the CTA has released e
                    ctx.step(plus(h, in_cta, form), n + 2, true_bit(out[k]))

    wait, run = unit(c, "barrier.lanes", [alive, same, bk.cur_epoch],
                     [("barrier.wait", BITS, lanes), ("barrier.run", BITS, lanes)],
                     lane_states)

    top = (1 << pc_bits) - 1
    # A gate's big must exceed every value its form takes ungated: pc and highest -
    # lowest reach `top` (127 with the 128-block ROM). With 64, a lane at block >= 65
    # passed its gate closed: a barrier there trapped before the CTA's other warps
    # arrived (issue 36: the float dot kernel, blocks of 8 and 16).
    gate = float(top + 1)

    def span(ctx, outs):
        release, count, waiting = outs
        ctx.step(plus(ctx.sum01(wait), scaled(ctx.sum01(run), -float(lanes))), 1,
                 true_bit(release[0]))
        for k in range(lanes):
            pc = ctx.num(rows[k], 0, pc_bits)
            for t in range(1, top + 1):
                ctx.step(pc, t, {count[t - 1]: COUNT_UNIT}, when=[ctx.v01(wait, k)],
                         big=gate)
        ctx.linear(ctx.sum01(wait), {waiting[0]: COUNT_UNIT})

    release, count, waiting = unit(
        c, "barrier.span", [wait, run, *rows],
        [("barrier.release", BITS, 1), ("barrier.count", RAW, top, lanes * COUNT_UNIT),
         ("barrier.waiting", RAW, 1, lanes * COUNT_UNIT)], span)

    def ends(ctx, outs):
        hi, lo = outs
        n = {ctx.d(waiting)[0]: 1.0 / COUNT_UNIT}
        for t in range(1, top + 1):
            c_t = {ctx.d(count)[t - 1]: 1.0 / COUNT_UNIT}
            for j in range(pc_bits):  # bit j of the thermometer's sum: telescoping
                delta = (t >> j & 1) - ((t - 1) >> j & 1)
                if delta:
                    ctx.step(c_t, 1, {hi[j]: 2.0 * delta})
                    ctx.step(plus(c_t, scaled(n, -1)), 0, {lo[j]: 2.0 * delta},
                             when=[ctx.v01(release)])

    hi, lo = unit(c, "barrier.ends", [count, waiting, release],
                  [("barrier.highest", BITS, pc_bits), ("barrier.lowest", BITS, pc_bits)],
                  ends)

    def trap(ctx, outs):
        at_end, div, value = outs
        gap = plus(ctx.num(hi), scaled(ctx.num(lo), -1))
        ctx.step(gap, 1, true_bit(div[0]), when=[ctx.v01(release)], big=gate)
        ctx.step(gap, 1, true_bit(at_end[0]), when=[ctx.v01(release), ctx.v01(bk.is_end)],
                 big=gate)
        at_trap = plus(ctx.const(1), scaled(ctx.v01(bk.is_v), -1))
        for j in range(pc_bits):
            ctx.step(plus(ctx.v01(lo, j), at_trap), 2, true_bit(value[j]))
            ctx.step(plus(ctx.v01(hi, j), ctx.v01(bk.is_v)), 2, true_bit(value[j]))

    at_end, div, value = unit(c, "barrier.trap", [hi, lo, release, bk.is_end, bk.is_v],
                              [("barrier.at_end", BITS, 1), ("barrier.divergent", BITS, 1),
                               ("barrier.value", BITS, pc_bits)], trap)
    return BarrierDetector(at_end, div, value)
