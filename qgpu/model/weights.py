"""model.weights: `QwenWeights`, the container every other part consumes.

A model is its `QwenConfig` plus float32 tensors named exactly as in the state dict of
transformers' `Qwen3_5ForCausalLM` ("model.layers.3.linear_attn.in_proj_qkv.weight", ...),
with the same shapes. The circuit compiler fills one, the reference and fast engines run
it, and the checkpoint writer saves it unchanged.

Each tensor is held in one of two forms (`stored_form` decides, on every assignment):
- a numpy array: vectors, the conv weights, small matrices, and matrices with more than
  SPARSE_MAX_FILL of their entries nonzero (random test weights, a real base model);
- a `SparseTensor` (model.sparse_tensor): the other matrices of SPARSE_MIN_SIZE entries or
  more, i.e. compiled weights, which are >99.8% zeros. It takes the same numpy indexing
  for writes (`w.layer(i, "mlp.up_proj.weight")[u, d] = c`) and returns dense copies for
  reads; `np.asarray` densifies it.
Readers that want one form ask for it: `dense(name)` / `layer_dense(i, name)` (a dense
array), `csr(name)` (the nonzero entries as a `Csr`, without scanning a sparse tensor).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qgpu.model.config import FULL, LINEAR, ModelConfigError, QwenConfig
from qgpu.model.csr import Csr
from qgpu.model.sparse_tensor import SparseTensor

EMBED = "model.embed_tokens.weight"
FINAL_NORM = "model.norm.weight"
LM_HEAD = "lm_head.weight"
SPARSE_MIN_SIZE = 1 << 16  # matrices with fewer entries are always dense arrays
SPARSE_MAX_FILL = 0.25  # denser matrices are dense arrays (and so are random weights)

Tensor = np.ndarray | SparseTensor


def sparse_shape(shape: tuple[int, ...]) -> bool:
    """Is a tensor of this shape held as a SparseTensor when it is sparse enough?"""
    return len(shape) == 2 and shape[0] * shape[1] >= SPARSE_MIN_SIZE


def stored_form(value) -> Tensor:
    """The form QwenWeights holds `value` in: a SparseTensor for a large matrix with at
    most SPARSE_MAX_FILL nonzeros (or one given as a SparseTensor), else a float32 array."""
    if isinstance(value, SparseTensor):
        return value if sparse_shape(value.shape) else value.todense()
    value = np.ascontiguousarray(value, dtype=np.float32)
    if sparse_shape(value.shape) and (np.count_nonzero(value)
                                      <= SPARSE_MAX_FILL * value.size):
        return SparseTensor.from_dense(value)
    return value


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
    """A Qwen3.5 text model (float32, HF names and shapes; dense or sparse tensors)."""

    config: QwenConfig
    tensors: dict[str, Tensor] = field(default_factory=dict)

    def __post_init__(self):
        self.tensors = {k: stored_form(v) for k, v in self.tensors.items()}
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
        A full-attention layer with zero weights adds exactly 0 to the residual. Large
        matrices start as empty SparseTensors (what the compiler writes into)."""
        return cls(config, {k: SparseTensor.zeros(s) if sparse_shape(s)
                            else np.zeros(s, np.float32)
                            for k, s in expected_shapes(config).items()})

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
    def __getitem__(self, name: str) -> Tensor:
        return self.tensors[name]

    def __setitem__(self, name: str, value) -> None:
        want = expected_shapes(self.config).get(name)
        if want is None:
            raise ModelConfigError(f"{name} is not a parameter of this model")
        value = stored_form(value)
        if value.shape != want:
            raise ModelConfigError(f"{name} needs shape {want}, got {value.shape}")
        self.tensors[name] = value

    def layer(self, index: int, name: str) -> Tensor:
        """A parameter of layer `index` by its short name, e.g. "mlp.up_proj.weight"."""
        return self.tensors[layer_prefix(index) + name]

    @property
    def head_name(self) -> str:
        """The tensor holding the output head: the embedding when tied, else lm_head."""
        return EMBED if self.config.tie_word_embeddings else LM_HEAD

    @property
    def output_head(self) -> Tensor:
        """[vocab, hidden]: the embedding when tied, else lm_head.weight."""
        return self.tensors[self.head_name]

    def is_sparse(self, name: str) -> bool:
        return isinstance(self.tensors[name], SparseTensor)

    def dense(self, name: str) -> np.ndarray:
        """The tensor as a dense array (the stored array itself when it is dense)."""
        t = self.tensors[name]
        return t.todense() if isinstance(t, SparseTensor) else t

    def layer_dense(self, index: int, name: str) -> np.ndarray:
        return self.dense(layer_prefix(index) + name)

    def csr(self, name: str) -> Csr:
        """The nonzero entries of a matrix (sparse tensors are not scanned densely)."""
        t = self.tensors[name]
        return t.csr().nonzero() if isinstance(t, SparseTensor) else Csr.from_dense(t)

    def layer_csr(self, index: int, name: str) -> Csr:
        return self.csr(layer_prefix(index) + name)

    def any_nonzero(self, name: str) -> bool:
        t = self.tensors[name]
        return t.any() if isinstance(t, SparseTensor) else bool(np.any(t))

    def layer_is_linear(self, index: int) -> bool:
        return self.config.layer_types[index] == LINEAR

    def layer_is_zero_attention(self, index: int) -> bool:
        """True for a full-attention layer whose attention adds exactly 0 (o_proj zero)."""
        return (self.config.layer_types[index] == FULL
                and not self.any_nonzero(layer_prefix(index) + "self_attn.o_proj.weight"))

    def nonzero_count(self) -> int:
        return int(sum(v.count_nonzero() if isinstance(v, SparseTensor) else np.count_nonzero(v)
                       for v in self.tensors.values()))

    @property
    def nbytes(self) -> int:
        """Memory the tensors take as held (dense arrays and sparse storage)."""
        return int(sum(v.nbytes for v in self.tensors.values()))

    def copy(self) -> QwenWeights:
        return QwenWeights(self.config, {k: v.copy() for k, v in self.tensors.items()})
