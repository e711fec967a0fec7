"""protocol.trace: the expected launch trace (what the model must write after GO), derived
from the reference interpreter's block events (protocol v1).

For each executed block, in order:
    EXEC(b, w, m, e)         m = the active lanes, e = the CTA's barrier releases mod 4
    R(r) {V(lo) V(hi)}       per writeback register r (ascending), per active lane
    ADDR(a) V(lo) V(hi)      per memory word written, in operation order
    END(t)                   t = the active lanes that took a `br` (0 otherwise)
and finally HALT.
"""

from __future__ import annotations

from qgpu.interp.simt import BlockEvent
from qgpu.protocol.vocab import EPOCHS, split32, tok


def lane_mask(lanes) -> int:
    return sum(1 << lane for lane in lanes)


def event_tokens(ev: BlockEvent) -> list[int]:
    out = [tok("EXEC", ev.block, ev.warp, lane_mask(ev.active), ev.epoch % EPOCHS)]
    for reg, per_lane in ev.writeback:
        out.append(tok("R", reg))
        for lane in ev.active:
            out += split32(per_lane[lane])
    for addr, value in ev.mem_writes:
        out += [tok("ADDR", addr), *split32(value)]
    out.append(tok("END", lane_mask(ev.branch_taken or ())))
    return out


def expected_trace(events: list[BlockEvent]) -> list[int]:
    """Every token the model writes for the launch, from the first EXEC to HALT."""
    out: list[int] = []
    for ev in events:
        out += event_tokens(ev)
    out.append(tok("HALT"))
    return out
