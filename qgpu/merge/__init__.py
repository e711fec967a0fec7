"""merge: one checkpoint that both chats and runs the compiled GPU (docs/design.md, "Merging").

A base Qwen3.5 checkpoint and a circuit compiled at the base's per-layer shapes become
one `Qwen3_5ForCausalLM` checkpoint: the residual stream widened by the circuit's dims,
the circuit layers in front of the base's layers, the GPU tokens appended to the
vocabulary, an untied output head. docs/merge.md says why each choice was made and what
it costs.

Modules:
- `layout.py`: `MergeLayout`, where every dim and token goes, the merged config, the
  norm-compensation constants, shape checks (`MergeError`);
- `tensors.py`: each merged tensor from the base's and the circuit's, in row blocks;
- `source.py`: base weights read lazily (a `QwenWeights`, or a checkpoint directory in
  our layout or a release's, rows memory-mapped);
- `writer.py`: sharded safetensors written tensor by tensor, block by block;
- `tokenizer.py`: GPU tokens added to the base's tokenizer files;
- `circuits.py`: the circuits `qgpu merge --circuit` knows, compiled at a base's shape;
- `merge.py`: `merge_weights` (in memory) and `merge_checkpoint` (directory to directory);
- `size.py`: parameters, bytes and peak memory of a merge, computed from shapes.

Owns: merged checkpoints. May import: examples, circuit, primitives, model, protocol,
isa, errors.
"""

from qgpu.merge.layout import MergeError, MergeLayout, circuit_part
from qgpu.merge.merge import merge_checkpoint, merge_weights

__all__ = ["MergeError", "MergeLayout", "circuit_part", "merge_checkpoint", "merge_weights"]
