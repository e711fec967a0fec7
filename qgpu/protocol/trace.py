"""protocol.trace: the expected launch trace (what the model must write after GO), derived
from the reference interpreter's block events.

For each executed block, in order:
    EXEC(b, w)
    V(lo) V(hi)         for each writeback register (ascending), each active lane (ascending)
    ADDR(a) V(lo) V(hi) for each memory word written, in operation order
    TAKEN(mask)         only after a `br` block: the active lanes that took the branch
and finally HALT.
"""

from __future__ import annotations

from qgpu.interp.machine import BlockEvent
from qgpu.protocol.vocab import exec_token, split32, tok


def event_tokens(ev: BlockEvent) -> list[int]:
    out = [exec_token(ev.block, ev.warp)]
    for _reg, per_lane in ev.writeback:
        for lane in ev.active:
            out += split32(per_lane[lane])
    for addr, value in ev.mem_writes:
        out += [tok("ADDR", addr), *split32(value)]
    if ev.branch_taken is not None:
        out.append(tok("TAKEN", sum(1 << lane for lane in ev.branch_taken)))
    return out


def expected_trace(events: list[BlockEvent]) -> list[int]:
    """Every token the model writes for the launch, from the first EXEC to HALT."""
    out: list[int] = []
    for ev in events:
        out += event_tokens(ev)
    out.append(tok("HALT"))
    return out
