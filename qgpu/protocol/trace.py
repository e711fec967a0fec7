"""protocol.trace: the expected launch trace (what the model must write after GO), derived
from the reference interpreter's block events (protocol v1).

For each executed block, in order:
    EXEC(b, w, m, e)         m = the active lanes, e = the CTA's barrier releases mod 4
    R(r) {V(lo) V(hi)}       per writeback register r (ascending), per active lane
    ADDR(a) V(lo) V(hi)      per memory word written, in operation order
    END(t)                   t = the active lanes that took a `br` (0 otherwise)
and finally HALT. A launch that faults ends instead with the fault's record (protocol v4):
    EXEC(b, w, m, e) TRAP(kind, lane, p) V(lo) V(hi)   a memory fault in block b
    ... END(t) TRAP(barrier, 0, 0) V(lo) V(hi)         lanes wait at different barriers
(isa.faults: the record, and the error the host makes of it).
"""

from __future__ import annotations

from qgpu.errors import LaunchError, ProtocolError
from qgpu.interp.simt import BlockEvent, MemoryWord
from qgpu.isa import limits
from qgpu.isa.faults import FAULT_KINDS, Trap
from qgpu.protocol.vocab import EPOCHS, split32, tok


def lane_mask(lanes) -> int:
    return sum(1 << lane for lane in lanes)


def trap_tokens(trap: Trap) -> list[int]:
    """TRAP(kind, lane, p) V(lo) V(hi)."""
    if trap.kind not in FAULT_KINDS:
        raise ProtocolError(f"a {trap.kind} fault has no TRAP token (local memory runs on "
                            f"the interpreter only)")
    return [tok("TRAP", FAULT_KINDS.index(trap.kind), trap.lane, trap.position),
            *split32(trap.address)]


def flat_address(word: MemoryWord) -> int:
    """The ADDR token's word: the model machine's flat index of `word` (LaunchError for a
    word the model's memory does not have: such a launch cannot be traced)."""
    space, cta, index = word
    if index >= limits.MODEL_MEMORY.words(space) or cta >= limits.MODEL_MAX_CTAS:
        raise LaunchError(f"{space} word {index} of CTA {cta} is beyond the model "
                          f"machine's memory ({limits.MODEL_GLOBAL_WORDS} global words, "
                          f"{limits.MODEL_SHARED_WORDS} shared words per CTA, "
                          f"{limits.MODEL_MAX_CTAS} CTAs): protocol v5 cannot trace it")
    return limits.model_flat_address(space, index, cta)


def event_tokens(ev: BlockEvent) -> list[int]:
    out = [tok("EXEC", ev.block, ev.warp, lane_mask(ev.active), ev.epoch % EPOCHS)]
    if ev.trap is not None and ev.trap.memory:      # the block faulted: nothing else
        return out + trap_tokens(ev.trap)
    for reg, per_lane in ev.writeback:
        out.append(tok("R", reg))
        for lane in ev.active:
            out += split32(per_lane[lane])
    for word, value in ev.mem_writes:
        out += [tok("ADDR", flat_address(word)), *split32(value)]
    out.append(tok("END", lane_mask(ev.branch_taken or ())))
    if ev.trap is not None:                          # a barrier fault after the block
        out += trap_tokens(ev.trap)
    return out


def expected_trace(events: list[BlockEvent]) -> list[int]:
    """Every token the model writes for the launch, from the first EXEC to HALT (or to
    the end of the TRAP record when the last event carries a fault: Fault.events)."""
    out: list[int] = []
    for ev in events:
        out += event_tokens(ev)
    if not events or events[-1].trap is None:
        out.append(tok("HALT"))
    return out
