"""chat.prompt_cache: `PromptCache`, the states a text engine reached after token
prefixes it has already read (after the fixed system prompt, before each message, after
each answer), so that a retry or a new turn feeds only the tokens past the longest cached
prefix, as llama.cpp's prompt cache does.

A state is only ever reused for a prompt that starts with exactly the tokens that made
it (the recurrent layers cannot be rolled back), and it is copied both when stored and
when restored, so a generation never changes a cached state. Memory: a release's state
is ~20 MiB (the delta-rule states) plus the attention layers' keys and values; at most
`max_entries` states are kept, the least recently used dropped first.
"""

from __future__ import annotations

MAX_ENTRIES = 8


class PromptCache:
    def __init__(self, max_entries: int = MAX_ENTRIES):
        self.max_entries = max_entries
        self.entries: list[tuple[tuple[int, ...], object]] = []   # oldest first

    def restore(self, ids: list[int], new_state):
        """(tokens already read, a state after them): the longest cached prefix of `ids`
        that leaves at least one token to feed (the logits come from feeding it), else
        (0, new_state())."""
        best = None
        for index, (key, _) in enumerate(self.entries):
            if len(key) < len(ids) and tuple(ids[:len(key)]) == key and (
                    best is None or len(key) > len(self.entries[best][0])):
                best = index
        if best is None:
            return 0, new_state()
        key, state = self.entries.pop(best)
        self.entries.append((key, state))   # most recently used last
        return len(key), state.copy()

    def store(self, ids: list[int], state) -> None:
        key = tuple(int(i) for i in ids)
        if not key:
            return
        self.entries = [(k, s) for k, s in self.entries if k != key]
        self.entries.append((key, state.copy()))
        del self.entries[:-self.max_entries]
