"""interp.races: CUDA's rule for shared memory between the warps of a block, checked on
launches compiled from CUDA (`Program.cuda`).

CUDA orders the warps of a block only at barriers: two accesses of one shared word by
different warps between two releases of the block's barrier, at least one of them a
write, race, and a GPU may run them in either order. The ISA's schedule is deterministic
(docs/isa.md), so a machine program may rely on it, but a CUDA kernel that does would
give an answer no GPU promises, and qgpu's machine warps have 4 lanes where CUDA's have 32:
warp-synchronous code written for 32 threads in lockstep (a last-warp reduction through
`volatile` shared memory without `__syncwarp`) races across qgpu's warps. The
interpreter reports the first such race as an error. Lanes of one warp run in lockstep
and never race with each other; atomics do not race with atomics; two plain writes of the
same value are not reported (a flag many threads set). The model machine cannot see a
race while it runs: `--check` reports it (the interpreter's run), a plain model run does
not.

A group barrier (`bar.group`, the CUDA front end's warp barrier: CUDA's 32-lane warp is
a group of 8 machine warps) orders the accesses of its group's warps: each group counts
its releases, and two accesses by warps of one group in different group epochs do not
race (the lowered shuffles' and votes' scratch words are written and read so).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.errors import MachineError

READ, WRITE, ATOMIC = "reads", "writes", "updates atomically"


class RaceError(MachineError):
    """Two warps of a block touch one shared word between barriers, one of them writing."""


@dataclass
class _Word:
    epoch: int
    accesses: dict[int, tuple[str, int, int]] = field(default_factory=dict)
    # warp -> (kind, block, value written or read): its strongest access this CTA epoch
    recent: dict[int, tuple[int, int, tuple[str, int, int]]] = field(default_factory=dict)
    # warp -> (group, group epoch, strongest access in that group epoch)


class SharedRaces:
    """The shared words each CTA's warps touched since the CTA's last barrier release."""

    def __init__(self):
        self.words: dict[tuple[int, int], _Word] = {}

    def access(self, cta: int, epoch: int, word: int, warp: int, kind: str, block: int,
               value: int, group: int = 0, group_epoch: int = 0) -> None:
        entry = self.words.get((cta, word))
        if entry is None or entry.epoch != epoch:
            entry = self.words[(cta, word)] = _Word(epoch)
        for other, seen in entry.accesses.items():
            other_group, other_epoch, last = entry.recent[other]
            if other_group == group:      # ordered by the group's barrier, or not
                if other_epoch != group_epoch:
                    continue
                seen = last
            other_kind, other_block, other_value = seen
            if other == warp or _compatible(kind, value, other_kind, other_value):
                continue
            raise RaceError(
                f"data race on shared word {word} of CTA {cta}: warp {other} {other_kind} "
                f"it at block {other_block} and warp {warp} {kind} it at block {block} with "
                f"no __syncthreads() between them; CUDA orders a block's warps only at "
                f"barriers (qgpu's machine warps have 4 lanes: code written for 32 threads "
                f"in lockstep without __syncwarp(), e.g. a warp-synchronous reduction, "
                f"races here)")
        previous = entry.accesses.get(warp)
        if previous is None or previous[0] == READ:   # keep a warp's write over its read
            entry.accesses[warp] = (kind, block, value)
        recent = entry.recent.get(warp)
        if recent is None or recent[1] != group_epoch or recent[2][0] == READ:
            entry.recent[warp] = (group, group_epoch, (kind, block, value))


def _compatible(kind: str, value: int, other_kind: str, other_value: int) -> bool:
    if kind == READ and other_kind == READ:
        return True
    if kind == ATOMIC and other_kind == ATOMIC:
        return True
    return kind == WRITE and other_kind == WRITE and value == other_value
