"""interp.bounds: memory bounds per allocation, as compute-sanitizer's memcheck checks them.

A launch of the CUDA API places each array argument at its own range of global memory
(`Program.arrays`: name, first word, words, and the operand sites where the linker wrote
its base address). The interpreter tags registers with the array their value was derived
from: an operand site holding an array's base tags the result of its instruction; `mov`,
`add` (either operand) and `sub` (the first) keep a tag; every other result is untagged
(a value computed otherwise is not a pointer into a known array). A global load, store or
atomic whose address register, or whose offset site, is tagged must land inside that
array: else a fault (out-of-bounds-global, its message naming the array, the index and
the lane) even when the word is inside the machine's 128 words, so a write past a
one-word array into its neighbour is reported instead of silently done.

A register spilled to local memory (cuda.spill) keeps its tag there: `st.local` tags the
thread's word with its value's tag and `ld.local` gives the word's tag to its result, so a
spilled kernel is checked as the same kernel unspilled.

The model does not track allocations (its fault detector covers the 128-word memory, not
the arrays): such a launch runs to the end on the model, and `--check` reports the
mismatch at the interpreter's TRAP (docs/isa.md, "Faults").
"""

from __future__ import annotations

KEEP = {"mov": (0,), "add": (0, 1), "sub": (0,)}  # op -> operand positions a tag passes


class Bounds:
    """Register tags of one launch (`Machine.bounds`), or nothing to do without arrays."""

    def __init__(self, arrays):
        self.arrays = list(arrays)
        self.sites = {site: i for i, a in enumerate(self.arrays) for site in a.sites}
        self.tags: dict[tuple[int, int, int], int] = {}  # (warp, lane, register) -> array
        self.local: dict[tuple[int, int, int], int] = {}  # (warp, lane, local word) -> array
        self.loaded: dict[tuple[int, int], int] = {}     # an ld.local's tag, until result_tag

    def operand_tag(self, warp: int, lane: int, site: tuple, operand) -> int | None:
        tag = self.sites.get(site)
        if tag is None and hasattr(operand, "n"):
            tag = self.tags.get((warp, lane, operand.n))
        return tag

    def store_local(self, warp: int, lane: int, at: tuple, ins, word: int) -> None:
        """st.local: the word takes the tag of the stored value (operand b)."""
        tag = self.operand_tag(warp, lane, (*at, 1), ins.srcs[1])
        if tag is None:
            self.local.pop((warp, lane, word), None)
        else:
            self.local[(warp, lane, word)] = tag

    def load_local(self, warp: int, lane: int, word: int) -> None:
        """ld.local: its result (result_tag, next) takes the word's tag."""
        tag = self.local.get((warp, lane, word))
        if tag is None:
            self.loaded.pop((warp, lane), None)
        else:
            self.loaded[(warp, lane)] = tag

    def result_tag(self, warp: int, lane: int, at: tuple, ins) -> int | None:
        if ins.op == "ld.local":
            return self.loaded.pop((warp, lane), None)
        keep = KEEP.get(ins.op)
        if keep is None:
            return None
        tags = {self.operand_tag(warp, lane, (*at, i), ins.srcs[i]) for i in keep
                if i < len(ins.srcs)} - {None}
        return tags.pop() if len(tags) == 1 else None

    def set(self, warp: int, lane: int, reg: int, tag: int | None) -> None:
        if tag is None:
            self.tags.pop((warp, lane, reg), None)
        else:
            self.tags[(warp, lane, reg)] = tag

    def snapshot(self, warp: int, lanes) -> dict:
        return {k: v for k, v in self.tags.items() if k[0] == warp and k[1] in lanes}

    def restore(self, warp: int, lanes, saved: dict, keep_regs) -> None:
        """Block end: registers that are not written back get their tags from before."""
        for key in [k for k in self.tags if k[0] == warp and k[1] in lanes
                    and k[2] not in keep_regs]:
            del self.tags[key]
        for key, tag in saved.items():
            if key[2] not in keep_regs:
                self.tags[key] = tag

    def outside(self, warp: int, lane: int, at: tuple, ins, word: int) -> str | None:
        """The fault's words when the access at `word` leaves the array its address was
        derived from, else None."""
        tag = self.sites.get((*at, "offset"))
        if tag is None:
            tag = self.operand_tag(warp, lane, (*at, 0), ins.srcs[0])
        if tag is None:
            return None
        a = self.arrays[tag]
        if a.base <= word < a.base + a.words:
            return None
        return (f"index {word - a.base} of array {a.name}, which has {a.words} word"
                f"{'s' if a.words != 1 else ''} (global words {a.base}..."
                f"{a.base + a.words - 1})")
