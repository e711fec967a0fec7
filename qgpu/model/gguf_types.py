"""model.gguf_types: the GGML type of each tensor of a GGUF file, and its bytes.

llama.cpp's CPU matrix product converts its input activations to the weights' "dot type"
(F16 weights: F16 activations; BF16: BF16; Q8_0: Q8_0 blocks) before it multiplies, so a
type is exact only where both the weights and the activations that reach them hold in it.
Policy `exact` (the default), by the role of the tensor:
- the base's layers (a merge's layers after the circuit's), the embeddings and the head
  are BF16 where every value is exact in bfloat16 (a release's own weights), else float32:
  text runs as llama.cpp runs any bf16 model; at GPU positions the base's gates are
  closed by a GPU-flag weight of -2^50 that stays far below SiLU's zero after rounding,
  an embedding row is read without a product, and the GPU rows of the head weigh only the
  circuit's +-1 output bits;
- in the circuit's layers, the Gated DeltaNet input projections (`in_proj_qkv/z/a/b`:
  table keys, queries, values, gates) and the MLP's gate and up projections become F16
  where every value is exact in float16, else BF16 where every value is exact in
  bfloat16 (the value heads' ballast weight 2^22 is past float16's range): the inputs
  they weigh are the circuit's +-1 bits, one-hots, its constant and raw table reads and
  counts (a few significant bits times a power of two), exact in either type after the
  norm's power-of-two scale, and a text token's outputs there are gated to exactly 0
  whatever its rounded inputs;
- the circuit's down and output projections stay float32: their inputs are the MLP's
  gated products (up to ~2^23 with differences of 64 that carry the result) and
  RMSNormGated's outputs, which neither 16-bit type holds;
- tensors of zeros (the circuit's zero full-attention layer) become F16; norms and
  every other tensor of the circuit's layers keep float32.
Policy `f32`: every tensor float32 (the export before mixed types).
Q8_0 is not offered: llama.cpp quantizes the activations to Q8_0 blocks too, and a block
holding the GPU flag beside larger values rounds the flag away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

POLICIES = ("exact", "f32")
F16_PROJECTIONS = ("linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight",
                   "linear_attn.in_proj_a.weight", "linear_attn.in_proj_b.weight",
                   "mlp.gate_proj.weight", "mlp.up_proj.weight")


@dataclass(frozen=True)
class TensorType:
    name: str            # the GGMLQuantizationType's name
    itemsize: int        # bytes per element
    numpy: str           # the numpy dtype whose bytes are written

    def nbytes(self, shape: tuple[int, ...]) -> int:
        return self.itemsize * int(np.prod(shape))

    def encode(self, block: np.ndarray) -> np.ndarray:
        """A float32 block of this tensor as the bytes the file holds (exact by choice)."""
        block = np.ascontiguousarray(block, dtype=np.float32)
        if self.name == "BF16":
            if not bf16_exact(block):
                raise ValueError("a BF16 tensor holds values bfloat16 does not")
            return (block.view(np.uint32) >> 16).astype(np.uint16)
        if self.name == "F16":
            return block.astype(np.float16)
        return block


F32 = TensorType("F32", 4, "float32")
F16 = TensorType("F16", 2, "float16")
BF16 = TensorType("BF16", 2, "uint16")


def bf16_exact(block: np.ndarray) -> bool:
    return not np.any(np.ascontiguousarray(block, dtype=np.float32).view(np.uint32) & 0xFFFF)


def f16_exact(block: np.ndarray) -> bool:
    block = np.asarray(block, dtype=np.float32)
    with np.errstate(over="ignore"):
        return bool(np.array_equal(block.astype(np.float16).astype(np.float32), block))


def layer_of(name: str) -> int | None:
    parts = name.split(".")
    return int(parts[2]) if name.startswith("model.layers.") else None


def choose_type(name: str, stored: str, shape: tuple[int, ...],
                blocks: Callable[[], Iterable[np.ndarray]], policy: str = "exact",
                circuit_layers: int | None = None) -> TensorType:
    """The type of HF parameter `name` (stored as `stored`: "BF16", "F32", ... in the
    checkpoint; "F32" for weights in memory). `blocks()` yields its float32 rows when the
    choice needs the values; circuit_layers: how many layers from the first are the
    circuit's (None: all of them)."""
    if policy not in POLICIES:
        raise ValueError(f"GGUF type policy {policy!r} is not one of {POLICIES}")
    if policy == "f32" or len(shape) < 2 or "conv1d" in name:
        return F32
    layer = layer_of(name)
    circuit = layer is not None and (circuit_layers is None or layer < circuit_layers)
    if not circuit:   # a base's tensor, the embeddings, the head: bf16 where it holds them
        if stored == "BF16" or all(bf16_exact(block) for block in blocks()):
            return BF16
        return F32
    candidate = name.endswith(F16_PROJECTIONS)
    zeros, half, brain = True, True, True
    for block in blocks():
        if zeros and np.any(block):
            zeros = False
            if not candidate:
                return F32
        half = half and f16_exact(block)
        brain = brain and bf16_exact(block)
        if candidate and not (half or brain):
            return F32
    if zeros or (candidate and half):
        return F16
    return BF16 if candidate and brain else F32
