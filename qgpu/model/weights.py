"""model.weights: `QwenWeights`, the plain-numpy container every other part consumes.

A model is its `QwenConfig` plus float32 arrays named exactly as in the state dict of
transformers' `Qwen3_5ForCausalLM` ("model.layers.3.linear_attn.in_proj_qkv.weight", ...),
with the same shapes. The circuit compiler fills one, the reference and fast engines run
it, and the checkpoint writer saves it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qgpu.model.config import FULL, LINEAR, ModelConfigError, QwenConfig

EMBED = "model.embed_tokens.weight"
FINAL_NORM = "model.norm.weight"
LM_HEAD = "lm_head.weight"


def layer_prefix(index: int) -> str:
    return f"model.layers.{index}."


def layer_shapes(config: QwenConfig, index: int) -> dict[str, tuple[int, ...]]:
    """Parameter names (without the layer prefix) and shapes of layer `index`."""
    c, h = config, config.hidden_size
    shapes: dict[str, tuple[int, ...]] = {
        "input_layernorm.weight": (h,),
        "post_attention_layernorm.weight": (h,),
        "mlp.gate_proj.weight": (c.intermediate_size, h),
        "mlp.up_proj.weight": (c.intermediate_size, h),
        "mlp.down_proj.weight": (h, c.intermediate_size),
    }
    if c.layer_types[index] == LINEAR:
        hv = c.linear_num_value_heads
        shapes.update({
            "linear_attn.in_proj_qkv.weight": (c.conv_dim, h),
            "linear_attn.in_proj_z.weight": (c.value_dim, h),
            "linear_attn.in_proj_b.weight": (hv, h),
            "linear_attn.in_proj_a.weight": (hv, h),
            "linear_attn.conv1d.weight": (c.conv_dim, 1, c.linear_conv_kernel_dim),
            "linear_attn.dt_bias": (hv,),
            "linear_attn.A_log": (hv,),
            "linear_attn.norm.weight": (c.linear_value_head_dim,),
            "linear_attn.out_proj.weight": (h, c.value_dim),
        })
    else:
        nh, nkv, hd = c.num_attention_heads, c.num_key_value_heads, c.head_dim
        shapes.update({
            "self_attn.q_proj.weight": (nh * hd * 2, h),  # per head: query then output gate
            "self_attn.k_proj.weight": (nkv * hd, h),
            "self_attn.v_proj.weight": (nkv * hd, h),
            "self_attn.o_proj.weight": (h, nh * hd),
            "self_attn.q_norm.weight": (hd,),
            "self_attn.k_norm.weight": (hd,),
        })
    return shapes


def expected_shapes(config: QwenConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter of the model, full HF name -> shape."""
    shapes = {EMBED: (config.vocab_size, config.hidden_size), FINAL_NORM: (config.hidden_size,)}
    if not config.tie_word_embeddings:
        shapes[LM_HEAD] = (config.vocab_size, config.hidden_size)
    for i in range(config.num_hidden_layers):
        prefix = layer_prefix(i)
        shapes.update({prefix + k: v for k, v in layer_shapes(config, i).items()})
    return shapes


@dataclass
class QwenWeights:
    """A Qwen3.5 text model as numpy arrays (float32, HF names and shapes)."""

    config: QwenConfig
    tensors: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        self.tensors = {k: np.ascontiguousarray(v, dtype=np.float32)
                        for k, v in self.tensors.items()}
        self.validate()

    def validate(self) -> None:
        want = expected_shapes(self.config)
        missing = sorted(set(want) - set(self.tensors))
        extra = sorted(set(self.tensors) - set(want))
        if missing or extra:
            raise ModelConfigError(
                f"weights do not match the config: missing {missing[:5]}"
                f"{'...' if len(missing) > 5 else ''}, unexpected {extra[:5]}"
                f"{'...' if len(extra) > 5 else ''}"
            )
        for name, shape in want.items():
            if self.tensors[name].shape != shape:
                raise ModelConfigError(
                    f"{name} has shape {self.tensors[name].shape}, the config needs {shape}"
                )

    @classmethod
    def zeros(cls, config: QwenConfig) -> QwenWeights:
        """All-zero weights (norm weights 0 mean scale 1: Qwen3.5 norms are zero-centred).
        A full-attention layer with zero weights adds exactly 0 to the residual."""
        return cls(config, {k: np.zeros(s, np.float32) for k, s in expected_shapes(config).items()})

    @classmethod
    def random(cls, config: QwenConfig, seed: int = 0, scale: float = 0.05) -> QwenWeights:
        """Dense random weights for tests of the layer math (not a trained model)."""
        rng = np.random.default_rng(seed)
        tensors = {}
        for name, shape in expected_shapes(config).items():
            if name.endswith("A_log"):
                tensors[name] = np.log(rng.uniform(0.01, 16, shape))
            elif name.endswith("dt_bias"):
                tensors[name] = rng.uniform(0.5, 1.5, shape)
            elif name.endswith("norm.weight"):
                tensors[name] = rng.normal(0, 0.1, shape)
            else:
                tensors[name] = rng.normal(0, scale, shape)
        return cls(config, tensors)

    # -- access --
    def __getitem__(self, name: str) -> np.ndarray:
        return self.tensors[name]

    def __setitem__(self, name: str, value: np.ndarray) -> None:
        want = expected_shapes(self.config).get(name)
        if want is None:
            raise ModelConfigError(f"{name} is not a parameter of this model")
        value = np.ascontiguousarray(value, dtype=np.float32)
        if value.shape != want:
            raise ModelConfigError(f"{name} needs shape {want}, got {value.shape}")
        self.tensors[name] = value

    def layer(self, index: int, name: str) -> np.ndarray:
        """A parameter of layer `index` by its short name, e.g. "mlp.up_proj.weight"."""
        return self.tensors[layer_prefix(index) + name]

    @property
    def output_head(self) -> np.ndarray:
        """[vocab, hidden]: the embedding when tied, else lm_head.weight."""
        return self.tensors[EMBED if self.config.tie_word_embeddings else LM_HEAD]

    def layer_is_linear(self, index: int) -> bool:
        return self.config.layer_types[index] == LINEAR

    def layer_is_zero_attention(self, index: int) -> bool:
        """True for a full-attention layer whose attention adds exactly 0 (o_proj zero)."""
        return (self.config.layer_types[index] == FULL
                and not np.any(self.layer(index, "self_attn.o_proj.weight")))

    def nonzero_count(self) -> int:
        return int(sum(np.count_nonzero(v) for v in self.tensors.values()))

    def copy(self) -> QwenWeights:
        return QwenWeights(self.config, {k: v.copy() for k, v in self.tensors.items()})
