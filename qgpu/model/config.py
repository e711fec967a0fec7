"""model.config: the Qwen3.5 text-model configuration as plain Python (no torch).

Field names and meanings are those of transformers' `Qwen3_5TextConfig`, so a config
round-trips through `config.json` unchanged. Derived sizes (key_dim, conv_dim, ...) are
properties named as in transformers' `Qwen3_5GatedDeltaNet`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from qgpu.errors import QgpuError

LINEAR = "linear_attention"
FULL = "full_attention"


class ModelConfigError(QgpuError):
    """A model configuration that Qwen3.5's layer math cannot run."""


def _default_rope() -> dict:
    # Qwen3.5's published rope settings; text positions make mrope plain partial RoPE.
    return {
        "rope_type": "default",
        "rope_theta": 10_000_000.0,
        "partial_rotary_factor": 0.25,
        "mrope_section": [11, 11, 10],
        "mrope_interleaved": True,
    }


@dataclass
class QwenConfig:
    """Shapes of a Qwen3.5 decoder stack. Defaults are Qwen3.5-2B's text model."""

    hidden_size: int = 2048
    num_hidden_layers: int = 24
    layer_types: list[str] = field(default_factory=list)
    vocab_size: int = 248_320
    intermediate_size: int = 6144
    # Gated DeltaNet (linear attention) mixer
    linear_num_key_heads: int = 16
    linear_num_value_heads: int = 16
    linear_key_head_dim: int = 128
    linear_value_head_dim: int = 128
    linear_conv_kernel_dim: int = 4
    # full-attention mixer
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    head_dim: int = 256
    rope_parameters: dict = field(default_factory=_default_rope)
    max_position_embeddings: int = 262_144
    rms_norm_eps: float = 1e-6
    tie_word_embeddings: bool = True

    def __post_init__(self):
        if not self.layer_types:
            # transformers' default: every 4th layer is full attention
            self.layer_types = [
                FULL if (i + 1) % 4 == 0 else LINEAR for i in range(self.num_hidden_layers)
            ]
        self.layer_types = list(self.layer_types)
        self.validate()

    # -- derived sizes (names as in transformers' Qwen3_5GatedDeltaNet) --
    @property
    def key_dim(self) -> int:
        return self.linear_num_key_heads * self.linear_key_head_dim

    @property
    def value_dim(self) -> int:
        return self.linear_num_value_heads * self.linear_value_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    @property
    def value_heads_per_key_head(self) -> int:
        return self.linear_num_value_heads // self.linear_num_key_heads

    @property
    def rotary_dim(self) -> int:
        return int(self.head_dim * self.rope_parameters.get("partial_rotary_factor", 1.0))

    @property
    def rope_theta(self) -> float:
        return float(self.rope_parameters["rope_theta"])

    def validate(self) -> None:
        if len(self.layer_types) != self.num_hidden_layers:
            raise ModelConfigError(
                f"layer_types has {len(self.layer_types)} entries for "
                f"{self.num_hidden_layers} layers"
            )
        unknown = sorted(set(self.layer_types) - {LINEAR, FULL})
        if unknown:
            raise ModelConfigError(f"unknown layer types {unknown}; use {LINEAR!r} or {FULL!r}")
        if self.linear_num_value_heads % self.linear_num_key_heads:
            raise ModelConfigError(
                f"linear_num_value_heads={self.linear_num_value_heads} is not a multiple of "
                f"linear_num_key_heads={self.linear_num_key_heads}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise ModelConfigError(
                f"num_attention_heads={self.num_attention_heads} is not a multiple of "
                f"num_key_value_heads={self.num_key_value_heads}"
            )
        if self.rotary_dim % 2:
            raise ModelConfigError(f"rotary dimension {self.rotary_dim} must be even")

    # -- config.json --
    def to_hf_dict(self) -> dict:
        """A `config.json` body that transformers loads as `Qwen3_5ForCausalLM`."""
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        body["layer_types"] = list(self.layer_types)
        body["rope_parameters"] = dict(self.rope_parameters)
        body.update(
            model_type="qwen3_5_text",
            architectures=["Qwen3_5ForCausalLM"],
            hidden_act="silu",
            attention_bias=False,
            attention_dropout=0.0,
            use_cache=True,
            dtype="float32",
        )
        return body

    @classmethod
    def from_hf_dict(cls, body: dict) -> QwenConfig:
        """Read a transformers config dict: a text config, or a full Qwen3.5 config
        (`model_type` "qwen3_5") whose text part sits under `text_config`."""
        if "text_config" in body and body.get("model_type") != "qwen3_5_text":
            text = dict(body["text_config"])
            text.setdefault("tie_word_embeddings", body.get("tie_word_embeddings", False))
            body = text
        if body.get("hidden_act", "silu") != "silu":
            raise ModelConfigError(f"hidden_act {body['hidden_act']!r} is not silu")
        if body.get("attention_bias"):
            raise ModelConfigError("attention_bias=True is not Qwen3.5 layer math")
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in body.items() if k in known}
        rope = dict(kwargs.get("rope_parameters") or _default_rope())
        # older configs keep the factor or theta at top level
        for key in ("partial_rotary_factor", "rope_theta"):
            if key in body and key not in rope:
                rope[key] = body[key]
        rope.setdefault("rope_theta", 10_000_000.0)
        kwargs["rope_parameters"] = rope
        kwargs.setdefault("tie_word_embeddings", False)  # transformers' default for Qwen3.5
        return cls(**kwargs)
