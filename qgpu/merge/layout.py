"""merge.layout: where everything goes in a merged model that shares the base's dims, and
the constants that keep text and GPU tokens apart (docs/merge.md has the reasons).

Residual dims of the merged model (hidden H = W + 1 + m, W = max(Hb, Hc), m <= 3):
    [0, W)            shared        text: s * base embedding (dims < Hb)
                                    GPU: the circuit's residual (dims < Hc)
    W                 text flag T   text: c        GPU: 0        pad: c
    W + 1             GPU flag K    text: 0        GPU: b0, then ~2^50 after the circuit
    W + 2 ...         ballast       text: 0        GPU: b1, b2   (norm ballast)
Layers: the circuit's Lc layers, then the base's Lb. Tokens: text ids unchanged, GPU token
t is id Vb + t, then one pad token (id Vb + Vc). The output head is untied.

- Text in circuit layers: every circuit gate (GDN z, b, a; MLP gate; attention output
  gate) reads T with -FLAG_GAIN: silu/sigmoid give exact zeros, softplus 0 (decay exactly
  1), so a text token leaves the circuit layers bit-unchanged and never writes or decays
  the circuit's state.
- GPU tokens in circuit layers: the circuit's weights sit in dims [0, Hc) and its norms
  see mean(h^2) = the ledger's `mean` over all H dims (the ballast b0, b1, b2 carries
  mean * (H - Hc) in squares), so each circuit layer computes what it computes alone.
- The kill: a free MLP unit of the last circuit layer (or, when it has none, of one more
  layer after the circuit's, all zero but that unit) adds KILL (~2^50) to K for GPU
  tokens. In every later norm K then dominates mean(h^2): the GPU token's shared dims
  reach the base's projections scaled by ~sqrt(H) / 2^50 (its keys, values and conv
  entries in the base are ~1e-13 of a text token's), while K itself reaches them as
  ~sqrt(H): the base's gates read K with -NEUTRAL_GAIN (a GPU token leaves the base's
  layers bit-unchanged and their GDN states untouched).
- The pad token (T = c, K = 1, nothing else): gated off in both kinds of layers and with
  exact zero projections in both, it fills conv windows with zeros: a launch after text
  opens with CONV_PAD pads so the circuit's conv windows see what they see at a
  sequence's start.
- Text norms in base layers: as in a merge of disjoint dims (text scale s = 2^j, flag
  c^2 = eps (s^2 Hb - H), norm weights (1 + w) sqrt(Hb / H)): the base's arithmetic over
  H dims equals its own over Hb dims in real arithmetic.
- Head: text rows the base's head plus -NEUTRAL_GAIN on K; GPU rows the circuit's head
  (its final norm folded in, divided by the merged final norm's weights on shared dims,
  times the gain that undoes the kill's scale) plus -HEAD_FLAG_GAIN on T.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from qgpu.circuit.schedule import LayerShape
from qgpu.errors import QgpuError
from qgpu.model.config import LINEAR, QwenConfig
from qgpu.model.weights import QwenWeights
from qgpu.primitives.norm import four_squares

GPU_LOGIT_GAIN = 1024.0  # GPU logits ~ circuit logits x 2^10: margins 2 -> ~2048
FLAG_GAIN = 2.0 ** 64  # T switches circuit gates off for text (and pad) tokens
HEAD_FLAG_GAIN = 2.0 ** 100  # T keeps GPU logits far below text logits at text positions
NEUTRAL_GAIN = 2.0 ** 20  # K switches the base's gates off for GPU and pad tokens
KILL = 2.0 ** 50  # what the kill unit adds to K
KILL_GATE = 32.0  # the kill unit's gate weight on K: silu(32 b0) = 32 b0 exactly (b0 >= 1)
PAD_GPU_FLAG = 1.0  # the pad token's K
CONV_PAD = 3  # pads before a launch that follows text (conv kernel 4 - 1)
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


def gpu_ballast(n: int, k: int) -> tuple[int, ...] | None:
    """k integers, the first >= 1, the rest >= 0, whose squares sum to n (or None)."""
    for a in range(math.isqrt(n), 0, -1):
        rest = n - a * a
        if k == 1:
            if rest == 0:
                return (a,)
            continue
        for m in range(1, k):  # the rest as m positive squares and zeros
            found = squares(rest, m) if rest else ()
            if found is not None:
                return (a, *found, *([0] * (k - 1 - len(found))))
    return None


def free_unit(circuit: QwenWeights, layer: int) -> int | None:
    """An MLP unit of `layer` the circuit leaves unused (gate, up and down all zero)."""
    gate = circuit.layer_csr(layer, "mlp.gate_proj.weight").counts
    up = circuit.layer_csr(layer, "mlp.up_proj.weight").counts
    down = circuit.layer_csr(layer, "mlp.down_proj.weight").col_counts()
    free = np.flatnonzero((gate == 0) & (up == 0) & (down == 0))
    return int(free[-1]) if free.size else None


@dataclass
class MergeLayout:
    base: QwenConfig
    circuit: QwenConfig
    one: int  # circuit-local dim of the constant 1
    mean: int
    norm_mode: str = "exact"  # "ratio" / "none": weaker compensations, for measurements
    neutralise: bool = True  # GPU tokens leave the base's layers and states untouched
    kill_layer: bool = False  # the circuit's last layer has no free MLP unit: add a layer
    ballast: tuple[int, ...] = field(init=False)  # GPU tokens' K, then further ballast
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
        hc = self.circuit.hidden_size
        for m in range(1, 4):
            found = gpu_ballast(self.mean * (self.shared + 1 + m - hc), m)
            if found is not None:
                self.ballast = found
                break
        else:  # pragma: no cover - m = 3 fails only for n = 4^a (8b + 7)
            raise MergeError(f"no ballast of <= 3 squares for {self.shared} shared dims")
        h, hb = self.hidden, self.base_hidden
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
    def shared(self) -> int:
        """W: the dims base and circuit share (the wider of the two)."""
        return max(self.base.hidden_size, self.circuit.hidden_size)

    circuit_offset = 0  # the circuit's dims start at 0 (shared with the base's)

    @property
    def flag_dim(self) -> int:
        """T: the text flag."""
        return self.shared

    @property
    def gpu_flag_dim(self) -> int:
        """K: the GPU flag (ballast b0, then the kill)."""
        return self.shared + 1

    @property
    def ballast_dims(self) -> list[int]:
        """K and the further ballast dims, in the order of `ballast`."""
        return [self.gpu_flag_dim + i for i in range(len(self.ballast))]

    @property
    def hidden(self) -> int:
        return self.shared + 1 + len(self.ballast)

    @property
    def norm_factor(self) -> float:
        """(1 + w) of a base norm is multiplied by this."""
        return 1.0 if self.norm_mode == "none" else math.sqrt(self.base_hidden / self.hidden)

    @property
    def kill_down(self) -> float:
        """The kill unit's down weight, a power of two (stored exactly in bf16):
        KILL_GATE b0 * b0 * kill_down is KILL within a factor sqrt(2)."""
        b0 = self.ballast[0]
        return 2.0 ** round(math.log2(KILL / (KILL_GATE * b0 * b0)))

    @property
    def gpu_flag_final(self) -> float:
        """K of a GPU token after the kill (float32, as the layers compute it)."""
        b0 = np.float32(self.ballast[0])
        add = np.float32(np.float32(KILL_GATE) * b0) * b0 * np.float32(self.kill_down)
        return float(np.float32(b0 + np.float32(add)))

    def gpu_final_scale(self) -> float:
        """rsqrt(mean(h^2) + eps) of a GPU token at the final norm (float64 estimate:
        K dominates; only the logits' common scale depends on it)."""
        k, b0 = self.gpu_flag_final, self.ballast[0]
        total = self.mean * self.hidden - b0 * b0 + k * k
        return 1.0 / math.sqrt(total / self.hidden + float(self.base.rms_norm_eps))

    # -- layers and tokens --
    @property
    def circuit_layers(self) -> int:
        """The circuit's layers, plus the kill layer when there is one."""
        return self.circuit.num_hidden_layers + int(self.kill_layer)

    @property
    def circuit_layer_types(self) -> list[str]:
        return list(self.circuit.layer_types) + ([LINEAR] if self.kill_layer else [])

    @property
    def gpu_token_offset(self) -> int:
        return self.base.vocab_size

    def gpu_token(self, token: int) -> int:
        return self.gpu_token_offset + int(token)

    @property
    def pad_token(self) -> int:
        return self.base.vocab_size + self.circuit.vocab_size

    @property
    def vocab_size(self) -> int:
        return self.base.vocab_size + self.circuit.vocab_size + 1

    def merged_config(self) -> QwenConfig:
        b = self.base
        return QwenConfig(
            hidden_size=self.hidden,
            num_hidden_layers=self.circuit_layers + b.num_hidden_layers,
            layer_types=self.circuit_layer_types + list(b.layer_types),
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
            "layout": "shared", "base_hidden": self.base_hidden,
            "circuit_hidden": self.circuit_hidden, "shared_dims": self.shared,
            "circuit_offset": self.circuit_offset, "flag_dim": self.flag_dim,
            "gpu_flag_dim": self.gpu_flag_dim, "ballast_dims": self.ballast_dims,
            "ballast": list(self.ballast), "hidden": self.hidden,
            "circuit_layers": self.circuit_layers, "base_layers": self.base.num_hidden_layers,
            "gpu_token_offset": self.gpu_token_offset, "gpu_tokens": self.circuit.vocab_size,
            "pad_token": self.pad_token, "conv_pad": CONV_PAD,
            "vocab_size": self.vocab_size, "text_scale": self.text_scale,
            "flag_value": self.flag_value, "norm_factor": self.norm_factor,
            "norm_mode": self.norm_mode, "neutralise": self.neutralise,
            "gpu_logit_gain": GPU_LOGIT_GAIN, "kill": KILL,
            "circuit_layer_types": self.circuit_layer_types, "kill_layer": self.kill_layer,
        }


def make_layout(base: QwenConfig, part: CircuitPart, **options) -> MergeLayout:
    """The layout of `part` merged into `base`: with a kill layer of its own when the
    circuit's last layer leaves no MLP unit free for the kill."""
    last = part.config.num_hidden_layers - 1
    options.setdefault("kill_layer", free_unit(part.weights, last) is None)
    return MergeLayout(base, part.config, part.one, part.mean, **options)
