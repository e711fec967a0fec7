"""model.state: `ModelState`, the per-sequence state both engines carry between steps.

The runtime reads results out of it: `recurrent[layer]` is the Gated DeltaNet state
[Hv, dk, dv] (row i of head h is `recurrent[layer][h, i]`, as transformers stores it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qgpu.model.config import LINEAR, QwenConfig


@dataclass
class ModelState:
    position: int = 0  # tokens consumed so far
    conv: dict[int, np.ndarray] = field(default_factory=dict)  # layer -> [conv_dim, K]
    recurrent: dict[int, np.ndarray] = field(default_factory=dict)  # layer -> [Hv, dk, dv]
    keys: dict[int, np.ndarray] = field(default_factory=dict)  # layer -> [S, Hkv, hd]
    values: dict[int, np.ndarray] = field(default_factory=dict)

    @classmethod
    def empty(cls, config: QwenConfig) -> ModelState:
        c = config
        state = cls()
        for i, kind in enumerate(c.layer_types):
            if kind == LINEAR:
                state.conv[i] = np.zeros((c.conv_dim, c.linear_conv_kernel_dim), np.float32)
                state.recurrent[i] = np.zeros(
                    (c.linear_num_value_heads, c.linear_key_head_dim, c.linear_value_head_dim),
                    np.float32)
            else:
                shape = (0, c.num_key_value_heads, c.head_dim)
                state.keys[i] = np.zeros(shape, np.float32)
                state.values[i] = np.zeros(shape, np.float32)
        return state

    def copy(self) -> ModelState:
        def dup(d):
            return {k: v.copy() for k, v in d.items()}
        return ModelState(self.position, dup(self.conv), dup(self.recurrent),
                          dup(self.keys), dup(self.values))
