"""cuda.guard: after a launch, the host checks that memory nothing owns is unchanged.

The model's fault detector bounds the machine's 128 words, not each allocation, so a store
past an array's end would land silently in the next region. After every launch (any
engine; the interpreter faults earlier, per allocation) the host reads the final memory
and checks, without computing anything of the kernel:

- the free words (`Program.free_words`): those after the last array and `__device__`
  variable, up to the printf buffer or the memory's end. A launch with printf keeps one of
  them as a guard word between the data and the buffer when the buffer's size is the
  default (it costs that word of the buffer's capacity);
- the printf buffer's unused part: every word past the records the counter names is
  still zero, and the records parse to exactly the counter's words.

A changed word is an error naming the word and the array it lies past, with the arrays
already copied back. Stores from one array into its neighbour (no word between them)
are not seen here: `--check` and `--engine interp` report those (interp.bounds).
"""

from __future__ import annotations

from qgpu.errors import MachineError


def _past(layout: dict, word: int) -> str:
    """The array (or region) whose end is the nearest below `word`."""
    below = [(base + n, name) for name, (base, n) in layout.items() if base + n <= word]
    if not below:
        return "no array"
    end, name = max(below)
    return f"array {name} (which ends at word {end - 1})"


def _changed_free(prep, memory) -> int | None:
    for w in prep.program.free_words:
        if memory[w] != prep.initial[w]:
            return w
    return None


def _changed_buffer(buffer, memory) -> int | None:
    """A word of the printf buffer outside its records, changed; or None."""
    used = memory[buffer.first]
    data = memory[buffer.first + 1:buffer.first + buffer.words]
    pos, end = 0, min(used, buffer.capacity)
    while pos < end:
        index = (data[pos] & 0x7FFF_FFFF) - 1
        if used > buffer.capacity and data[pos] == 0:
            return None         # a full buffer: records that did not fit are left zero
        if not 0 <= index < len(buffer.sites):
            return buffer.first + 1 + pos
        pos += buffer.sites[index].record_words
    if used > buffer.capacity:
        return None             # the overflow message says it (cuda.printf)
    if pos != used:
        return buffer.first
    for k in range(used, len(data)):
        if data[k]:
            return buffer.first + 1 + k
    return None


def check_untouched(prep, memory, copy_back) -> None:
    """Raise (after copy_back) if a word no argument owns changed during the launch."""
    word = _changed_free(prep, memory)
    region = "a free word"
    if word is None and prep.buffer is not None:
        word = _changed_buffer(prep.buffer, memory)
        region = "the printf buffer, outside its records,"
    if word is None:
        return
    copy_back()
    raise MachineError(
        f"{prep.kernel.name}: the launch changed global word {word} ({region} past "
        f"{_past(prep.layout, word)}): an out-of-bounds store; rerun with --check or "
        f"--engine interp (API: engine='interp') to see the faulting access")
