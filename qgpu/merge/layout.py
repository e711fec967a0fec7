"""merge.layout: where everything goes in a merged model, and the constants that keep
text and GPU tokens apart (docs/merge.md has the derivations).

Residual dims of the merged model (hidden H = Hb + Hc + 1 + k):
    [0, Hb)            the base's dims        text: s * base embedding   GPU: 0
    [Hb, Hb + Hc)      the circuit's dims     text: 0                    GPU: circuit embedding
    Hb + Hc            the text flag          text: c                    GPU: 0
    the k dims after   merge ballast          text: 0                    GPU: constants
Layers: the circuit's Lc layers, then the base's Lb. Tokens: text ids unchanged, GPU
token t is id Vb + t. The output head is untied.

- Merge ballast: the circuit keeps mean(h^2) over its own Hc dims at its ledger's power
  of 4 (`mean`); the k ballast dims make that hold over all H dims for GPU tokens, so
  every RMSNorm stays an exact identity for them (k <= 4 by Lagrange's theorem).
- Text scale s = 2^j and flag value c: a base RMSNorm over H dims sees text exactly as the
  original did over Hb dims when (1 + w') = (1 + w) sqrt(Hb / H), every residual write of
  the base is scaled by s and c^2 = eps (s^2 Hb - H) (then mean'(h) + eps =
  (s^2 Hb / H) (mean(h) + eps) exactly in real arithmetic). s a power of two keeps the
  scaled weights bit-exact.
- The flag tells text from GPU tokens where a projection must: circuit layers' `b` and `a`
  read it with -FLAG_GAIN (text tokens never write the circuit's state, decay exactly 1),
  the GPU rows of the head read it with -FLAG_GAIN (GPU tokens get probability 0 at text
  positions).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from qgpu.circuit.schedule import LayerShape
from qgpu.errors import QgpuError
from qgpu.model.config import QwenConfig
from qgpu.model.weights import QwenWeights
from qgpu.primitives.norm import four_squares

GPU_LOGIT_GAIN = 1024.0  # GPU head rows x 2^10: exact, margins 2 -> 2048 logits
FLAG_GAIN = 2.0 ** 64  # how hard the text flag switches a projection off
NEUTRAL_GATE = -1024.0  # sigmoid(-1024) == 0: beta / attention gate of GPU tokens in base
NEUTRAL_DECAY = -(2.0 ** 20)  # a + dt_bias <= -104: softplus == 0, decay exactly 1
NORM_MODES = ("exact", "ratio", "none")


class MergeError(QgpuError):
    """A base and a circuit that cannot be merged (shapes, vocabulary, norm precision)."""


@dataclass
class CircuitPart:
    """What the merge needs from a compiled circuit."""

    weights: QwenWeights  # the compiled layers, embedding and (untied) output head
    one: int  # the residual dim holding the constant 1
    mean: int  # the norm ledger's mean square (a power of 4)
    name: str = "circuit"
    token_names: list[str] | None = None  # one per circuit token, for the tokenizer
    info: dict = field(default_factory=dict)  # what a runtime needs (qgpu_merge.json)

    def __post_init__(self):
        if self.weights.config.tie_word_embeddings:
            raise MergeError("the circuit's output head must be untied (compiler output)")
        root = math.isqrt(self.mean)
        if root * root != self.mean:
            raise MergeError(f"the circuit's mean square {self.mean} is not a square")
        if self.token_names is not None and len(self.token_names) != self.vocab_size:
            raise MergeError(f"{len(self.token_names)} token names for a circuit vocabulary "
                             f"of {self.vocab_size}")

    @property
    def config(self) -> QwenConfig:
        return self.weights.config

    @property
    def vocab_size(self) -> int:
        return self.weights.config.vocab_size

    @property
    def norm_weight(self) -> float:
        return math.isqrt(self.mean) - 1.0


def circuit_part(compiled, token_names: list[str] | None = None) -> CircuitPart:
    """A `CircuitPart` from `qgpu.circuit.compile.compile_circuit`'s result."""
    return CircuitPart(compiled.weights, compiled.plan.one, compiled.plan.mean,
                       compiled.circuit.name, token_names)


def layer_shape_of(config: QwenConfig) -> LayerShape:
    """The per-layer shape a circuit must be compiled at to merge with this base."""
    c = config
    return LayerShape(c.linear_num_key_heads, c.linear_num_value_heads, c.linear_key_head_dim,
                      c.linear_value_head_dim, c.intermediate_size, c.linear_conv_kernel_dim,
                      c.num_attention_heads, c.num_key_value_heads, c.head_dim)


def check_shapes(base: QwenConfig, circuit: QwenConfig) -> None:
    want, got = layer_shape_of(base).describe(), layer_shape_of(circuit).describe()
    bad = [f"{k} {got[k]} (base {want[k]})" for k in want if want[k] != got[k]]
    if bad:
        raise MergeError("the circuit was compiled at other per-layer shapes than the base's: "
                         + ", ".join(bad) + "; compile it at merge.layout.layer_shape_of(base)")


def squares(n: int, k: int) -> tuple[int, ...] | None:
    """k positive integers whose squares sum to n, or None (k = 4 always succeeds, possibly
    with zeros: Lagrange's theorem)."""
    if k == 4:
        return four_squares(n)
    if k == 1:
        r = math.isqrt(n)
        return (r,) if r > 0 and r * r == n else None
    for a in range(math.isqrt(n), 0, -1):
        rest = squares(n - a * a, k - 1)
        if rest is not None:
            return (a, *rest)
    return None


@dataclass
class MergeLayout:
    base: QwenConfig
    circuit: QwenConfig
    one: int  # circuit-local dim of the constant 1
    mean: int
    norm_mode: str = "exact"  # "ratio" / "none": weaker compensations, for measurements
    neutralise: bool = True  # GPU tokens neither write nor decay the base's GDN state
    ballast: tuple[int, ...] = field(init=False)
    text_scale: float = field(init=False)
    flag_value: float = field(init=False)

    def __post_init__(self):
        if self.norm_mode not in NORM_MODES:
            raise MergeError(f"norm mode must be one of {NORM_MODES}, not {self.norm_mode!r}")
        check_shapes(self.base, self.circuit)
        eps = np.float32(self.base.rms_norm_eps)
        if np.float32(1) / np.sqrt(np.float32(self.mean) + eps) != np.float32(
                1 / math.sqrt(self.mean)):
            raise MergeError(f"rms_norm_eps {self.base.rms_norm_eps} is too large for the "
                             f"circuit's exact norms (mean square {self.mean})")
        hb = self.base.hidden_size
        for k in range(1, 5):
            found = squares(self.mean * (hb + 1 + k), k)
            if found is not None:
                self.ballast = found
                break
        h = self.hidden
        if self.norm_mode == "exact":
            scale = 2.0
            while scale * scale * hb <= h:
                scale *= 2.0
            self.text_scale = scale
            self.flag_value = float(np.float32(math.sqrt(float(eps) * (scale * scale * hb - h))))
        else:
            self.text_scale, self.flag_value = 1.0, 2.0 ** -12

    # -- dims --
    @property
    def base_hidden(self) -> int:
        return self.base.hidden_size

    @property
    def circuit_hidden(self) -> int:
        return self.circuit.hidden_size

    @property
    def circuit_offset(self) -> int:
        return self.base_hidden

    @property
    def flag_dim(self) -> int:
        return self.base_hidden + self.circuit_hidden

    @property
    def ballast_dims(self) -> list[int]:
        return [self.flag_dim + 1 + i for i in range(len(self.ballast))]

    @property
    def one_dim(self) -> int:
        return self.circuit_offset + self.one

    @property
    def hidden(self) -> int:
        return self.flag_dim + 1 + len(self.ballast)

    @property
    def norm_factor(self) -> float:
        """(1 + w) of a base norm is multiplied by this."""
        return 1.0 if self.norm_mode == "none" else math.sqrt(self.base_hidden / self.hidden)

    # -- layers and tokens --
    @property
    def circuit_layers(self) -> int:
        return self.circuit.num_hidden_layers

    @property
    def gpu_token_offset(self) -> int:
        return self.base.vocab_size

    def gpu_token(self, token: int) -> int:
        return self.gpu_token_offset + int(token)

    @property
    def vocab_size(self) -> int:
        return self.base.vocab_size + self.circuit.vocab_size

    def merged_config(self) -> QwenConfig:
        b = self.base
        return QwenConfig(
            hidden_size=self.hidden,
            num_hidden_layers=self.circuit_layers + b.num_hidden_layers,
            layer_types=list(self.circuit.layer_types) + list(b.layer_types),
            vocab_size=self.vocab_size, intermediate_size=b.intermediate_size,
            linear_num_key_heads=b.linear_num_key_heads,
            linear_num_value_heads=b.linear_num_value_heads,
            linear_key_head_dim=b.linear_key_head_dim,
            linear_value_head_dim=b.linear_value_head_dim,
            linear_conv_kernel_dim=b.linear_conv_kernel_dim,
            num_attention_heads=b.num_attention_heads, num_key_value_heads=b.num_key_value_heads,
            head_dim=b.head_dim, rope_parameters=dict(b.rope_parameters),
            max_position_embeddings=b.max_position_embeddings, rms_norm_eps=b.rms_norm_eps,
            tie_word_embeddings=False)

    def describe(self) -> dict:
        """What a runtime needs to drive the merged model (written as qgpu_merge.json)."""
        return {
            "base_hidden": self.base_hidden, "circuit_hidden": self.circuit_hidden,
            "circuit_offset": self.circuit_offset, "flag_dim": self.flag_dim,
            "ballast_dims": self.ballast_dims, "ballast": list(self.ballast),
            "hidden": self.hidden, "circuit_layers": self.circuit_layers,
            "base_layers": self.base.num_hidden_layers,
            "gpu_token_offset": self.gpu_token_offset, "gpu_tokens": self.circuit.vocab_size,
            "vocab_size": self.vocab_size, "text_scale": self.text_scale,
            "flag_value": self.flag_value, "norm_factor": self.norm_factor,
            "norm_mode": self.norm_mode, "neutralise": self.neutralise,
            "gpu_logit_gain": GPU_LOGIT_GAIN,
            "circuit_layer_types": list(self.circuit.layer_types),
        }


def make_layout(base: QwenConfig, part: CircuitPart, **options) -> MergeLayout:
    return MergeLayout(base, part.config, part.one, part.mean, **options)
