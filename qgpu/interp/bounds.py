"""interp.bounds: memory bounds per allocation, as compute-sanitizer's memcheck checks them.

A launch of the CUDA API places each array argument, and each __constant__ or __device__
variable, at its own range of global memory (`Program.arrays`: name, first word, words,
bytes, element size, and the operand sites where the linker wrote its base address). The
interpreter tags registers with the array their value was derived from: an operand site
holding an array's base tags the result of its instruction; `mov`, `add` (either
operand) and `sub` (the first) keep a tag; `and` with the word mask of an 8/16-bit
access (~3, or ~2 for a 16-bit store) keeps it together with the exact byte address it
masked; every other result is untagged (a value computed otherwise is not a pointer
into a known array). A global load, store or atomic whose address register, or whose
offset site, is tagged must land inside that array: else a fault (out-of-bounds-global,
its message naming the array, the index and the lane) even when the word is inside the
machine's memory, so a write past a one-word array into its neighbour is reported
instead of silently done. An 8/16-bit access (the front end's `Program.accesses`) whose
exact byte address is known is checked by its bytes against the array's bytes: a byte
past a 5-byte array inside its second word faults as on a GPU.

A register spilled to local memory (cuda.spill) keeps its tag there: `st.local` tags the
thread's word with its value's tag and `ld.local` gives the word's tag to its result, so a
spilled kernel is checked as the same kernel unspilled.

`misaligned` is the alignment a GPU requires of the wider access a word operation is
part of: an 8-byte (long long) access on 8 bytes (its two words are each aligned, so the
machine itself does not fault).

The model does not track allocations (its fault detector covers its memory, not the
arrays): such a launch runs to the end on the model, and `--check` reports the mismatch
at the interpreter's TRAP (docs/isa.md, "Faults").
"""

from __future__ import annotations

from qgpu.isa import limits
from qgpu.isa.program import Imm

KEEP = {"mov": (0,), "add": (0, 1), "sub": (0,)}  # op -> operand positions a tag passes
WORD_MASKS = {0xFFFFFFFC, 0xFFFFFFFD}   # the aligned word of an 8/16-bit access


def misaligned(access: tuple[int, int] | None, address: int) -> tuple[int, str] | None:
    """(the access's first byte address, the fault's words) when the word operation at
    byte `address`, part of `access` = (bytes, part), belongs to a wider access a GPU
    would fault on as misaligned (an 8-byte one off 8 bytes), else None. (A 16-bit one
    off 2 bytes faults in the machine itself: its word address keeps bit 0.)"""
    if access is None or access[0] <= 4:
        return None
    width, part = access
    start = limits.u32(address - part)
    if start % width == 0:
        return None
    return start, (f"an {width}-byte (long long, int2) access must be {width}-byte "
                   f"aligned (a GPU faults on it: misaligned address)")


class Bounds:
    """Register tags of one launch (`Machine.bounds`), or nothing to do without arrays.
    A tag is (array index, exact byte address or None)."""

    def __init__(self, arrays):
        self.arrays = list(arrays)
        self.sites = {site: i for i, a in enumerate(self.arrays) for site in a.sites}
        self.tags: dict[tuple[int, int, int], tuple] = {}   # (warp, lane, register) -> tag
        self.local: dict[tuple[int, int, int], tuple] = {}  # (warp, lane, local word) -> tag
        self.loaded: dict[tuple[int, int], tuple] = {}     # an ld.local's tag, until result_tag

    def operand_tag(self, warp: int, lane: int, site: tuple, operand):
        tag = self.sites.get(site)
        if tag is not None:
            return tag, None
        if hasattr(operand, "n"):
            return self.tags.get((warp, lane, operand.n))
        return None

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

    def result_tag(self, warp: int, lane: int, at: tuple, ins, regs):
        """The tag of `ins`'s result for this lane; `regs` are the lane's registers as
        its stage began."""
        if ins.op == "ld.local":
            return self.loaded.pop((warp, lane), None)
        if ins.op == "and" and len(ins.srcs) == 2:
            for i, o in enumerate(ins.srcs):
                mask = ins.srcs[1 - i]
                if isinstance(mask, Imm) and mask.value in WORD_MASKS:
                    tag = self.operand_tag(warp, lane, (*at, i), o)
                    if tag is not None:
                        value = o.value if isinstance(o, Imm) else \
                            0 if o.n == limits.ZERO_REG else regs[o.n]
                        return tag[0], value
            return None
        if ins.op == "mov":
            return self.operand_tag(warp, lane, (*at, 0), ins.srcs[0])
        keep = KEEP.get(ins.op)
        if keep is None:
            return None
        tags = {t[0] for i in keep if i < len(ins.srcs)
                if (t := self.operand_tag(warp, lane, (*at, i), ins.srcs[i])) is not None}
        return (tags.pop(), None) if len(tags) == 1 else None

    def set(self, warp: int, lane: int, reg: int, tag) -> None:
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

    def address_tag(self, warp: int, lane: int, at: tuple, ins):
        """The tag of a memory operation's address: its offset site's, else its address
        register's."""
        tag = self.sites.get((*at, "offset"))
        if tag is not None:
            return tag, None
        return self.operand_tag(warp, lane, (*at, 0), ins.srcs[0])

    def exact(self, warp: int, lane: int, at: tuple, ins) -> int | None:
        """An 8/16-bit access's own byte address, where its word's address was masked
        from a tagged one."""
        tag = self.address_tag(warp, lane, at, ins)
        return tag[1] if tag is not None and ins.offset == 0 else None

    def outside(self, warp: int, lane: int, at: tuple, ins, word: int,
                narrow: tuple[int, int] | None = None) -> str | None:
        """The fault's words when the access at `word` leaves the array its address was
        derived from, else None. `narrow` = (exact byte address, bytes) of an 8/16-bit
        access: its bytes are checked against the array's bytes instead."""
        tag = self.address_tag(warp, lane, at, ins)
        if tag is None:
            return None
        a = self.arrays[tag[0]]
        nbytes, item = a.nbytes or a.words * 4, a.itemsize
        if narrow is not None:
            first, width = narrow
            b = first - a.base * 4
            if 0 <= b and b + width <= nbytes:
                return None
            if item == 1:
                return (f"byte {b} of array {a.name}, which has {nbytes} byte"
                        f"{'s' if nbytes != 1 else ''} (from global word {a.base})")
            return (f"index {b // item} (byte {b}) of array {a.name}, which has "
                    f"{nbytes // item} element{'s' if nbytes // item != 1 else ''} of "
                    f"{item} byte{'s' if item != 1 else ''} ({nbytes} bytes from global "
                    f"word {a.base})")
        if a.base <= word < a.base + a.words:
            return None
        return (f"index {word - a.base} of array {a.name}, which has {a.words} word"
                f"{'s' if a.words != 1 else ''} (global words {a.base}..."
                f"{a.base + a.words - 1})")
