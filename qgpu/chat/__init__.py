"""chat: talk to a merged checkpoint (qgpu merge --circuit machine) and run kernels on the
GPU machine inside it.

- `text.py`: `TextModel`, the language part: the merged model on the fast engine, greedy
  generation with the base's tokenizer (`generate(prompt) -> text`);
- `prompts.py`: the chat format and the advanced mode's prompt templates (the machine's
  limits and operations are filled in from its spec, so new operations show up there);
- `kernels.py`: the host side of a kernel launch: extract a ```cuda block and its launch
  line, compile (qgpu.cuda), run on the machine part (runtime.checkpoint), readable
  records and results;
- `session.py`: `ChatSession`: normal mode (plain chat, `/run FILE.cu ...` launches) and
  advanced mode (the language part writes a kernel for the question, the machine runs it,
  one retry with the error fed back).

The language part is anything with `generate(prompt: str) -> str`: a `TextModel` for a
real base, or a scripted stand-in in tests.

Owns: chatting with a merged checkpoint. May import: runtime, cuda, protocol, isa,
errors; tokenizers (the `chat` extra) when a text model loads.
"""

from qgpu.chat.session import ChatSession, Reply

__all__ = ["ChatSession", "Reply"]
