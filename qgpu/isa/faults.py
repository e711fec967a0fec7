"""isa.faults: the machine's faults as data. A fault ends a launch; the interpreter
raises `Fault` (a MachineError) carrying a `Trap` record, and the protocol writes the same
record as the trace's last tokens (`TRAP(kind, lane, p) V(lo) V(hi)`, docs/protocol.md),
so a model that detects the fault itself is checked token by token like any block, and
the host turns the model's record into the interpreter's error, word for word
(`fault_message`).

Kinds, in the order of the TRAP token's first field:
  misaligned-global, out-of-bounds-global, misaligned-shared, out-of-bounds-shared:
      a memory operation (instruction position p of the block) of lane `lane` accessed
      byte address `address` (the operand plus the offset, mod 2^32);
  barrier: no lane of CTA `cta` runs and its waiting lanes wait at different barriers;
      `address` packs the lowest and highest target block (lo | hi << 16), lane and p
      are 0, and block/warp are the block that made the last lane wait.
  misaligned-local, out-of-bounds-local: the same for a thread's local memory (interpreter
      only: no TRAP token, LOCAL_FAULT_KINDS).
Which fault is reported when several lanes or operations would fault: the first memory
operation in stage and slot order, its lowest active lane (the interpreter's order).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.errors import MachineError
from qgpu.isa import limits

FAULT_KINDS = ("misaligned-global", "out-of-bounds-global", "misaligned-shared",
               "out-of-bounds-shared", "barrier")
# local memory (ld.local / st.local, per thread) faults on the interpreter only: the model
# machine has no local memory, so these kinds have no TRAP token (not in FAULT_KINDS)
LOCAL_FAULT_KINDS = ("misaligned-local", "out-of-bounds-local")


@dataclass(frozen=True)
class Trap:
    kind: str          # one of FAULT_KINDS
    address: int       # byte address (memory faults); lo | hi << 16 target blocks (barrier)
    warp: int          # the launch-wide warp index (CTA by CTA)
    lane: int
    block: int         # the machine block executing (memory) or just ended (barrier)
    position: int = 0  # instruction position p = stage * SLOTS + slot (memory faults)
    cta: int = 0
    op: str = ""       # the operation (memory faults), from the program
    # the interpreter's allocation check (interp.bounds): the array and index left; not
    # in the TRAP record (the model does not see allocations)
    detail: str = field(default="", compare=False)

    @property
    def memory(self) -> bool:
        return self.kind != "barrier"


def memory_kind(space: str, misaligned: bool) -> str:
    return f"{'misaligned' if misaligned else 'out-of-bounds'}-{space}"


def fault_message(trap: Trap, sizes: limits.MemorySizes = limits.ISA_MEMORY) -> str:
    """The one error text of a fault, from its record and the memory sizes of the
    machine that ran it (the interpreter's or the model's)."""
    if trap.kind == "barrier":
        lo, hi = trap.address & 0xFFFF, trap.address >> 16
        return (f"barrier cannot complete: lanes of CTA {trap.cta} wait at different "
                f"barriers (continuing at blocks {lo} and {hi}; the last lane arrived in "
                f"block {trap.block}, warp {trap.warp})")
    what, space = trap.kind.split("-", 1) if trap.kind.startswith("misaligned") else \
        ("out-of-bounds", trap.kind.rsplit("-", 1)[1])
    words = limits.LOCAL_WORDS if space == "local" else sizes.words(space)
    text = (f"{what} {space} access at byte address {trap.address} ({trap.op}) by lane "
            f"{trap.lane} of warp {trap.warp} (CTA {trap.cta}), block {trap.block}")
    if trap.detail:
        text += f": {trap.detail}"
    elif what == "out-of-bounds":
        text += f"; {space} memory has {words} words" + " per thread" * (space == "local")
    return text


class Fault(MachineError):
    """A launch that faulted: `trap` is the record, `events` the interpreter's block
    events up to it (the last one carries the trap: see protocol.trace)."""

    def __init__(self, trap: Trap, events=None,
                 sizes: limits.MemorySizes = limits.ISA_MEMORY):
        super().__init__(fault_message(trap, sizes))
        self.trap = trap
        self.events = list(events or [])
