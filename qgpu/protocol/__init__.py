"""protocol: the launch protocol (docs/protocol.md): the vocabulary, the prompt the host
feeds, the trace the model writes (derived from the interpreter: the oracle), and a
decoder that prints any token stream as readable records.

    encode_prompt(program, grid, block, memory) -> prompt tokens
    expected_trace(events)                      -> trace tokens (first EXEC .. HALT)
    decode_prompt(tokens) -> Launch ; decode_trace(launch, tokens) -> [Record]

Owns: tokens. May import: interp (events), isa, errors.
"""

from qgpu.protocol.decode import Launch, Record, decode_prompt, decode_trace, iter_trace
from qgpu.protocol.prompt import encode_prompt
from qgpu.protocol.trace import expected_trace
from qgpu.protocol.vocab import PROTOCOL_VERSION, VOCAB_SIZE, kind_of, name, tok

__all__ = ["Launch", "Record", "decode_prompt", "decode_trace", "iter_trace", "encode_prompt",
           "expected_trace", "PROTOCOL_VERSION", "VOCAB_SIZE", "kind_of", "name", "tok"]
