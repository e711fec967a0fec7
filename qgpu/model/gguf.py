"""model.gguf: a Qwen3.5 checkpoint (qgpu's weights, merged or the machine alone) as a
GGUF file that llama.cpp loads as its `qwen35` architecture, each tensor in the smallest
type that keeps it exact there (`model.gguf_types`: the base's bfloat16 stays BF16, the
circuit's table projections F16, the rest float32; policy "f32": float32 throughout).

Written with the `gguf` package's `GGUFWriter` (metadata, tensor infos), the tensor data
streamed in row blocks so a checkpoint larger than memory converts (the writer's own
`write_tensor_data` takes whole arrays). The conversion is the one llama.cpp's
`convert_hf_to_gguf.py` applies to `Qwen3_5ForCausalLM` (its `Qwen3_5TextModel`):
- names through `gguf.get_tensor_name_map(QWEN35)` (`linear_attn.in_proj_qkv` ->
  `blk.N.attn_qkv`, `in_proj_z` -> `attn_gate`, `in_proj_a/b` -> `ssm_alpha/beta`,
  `dt_bias` -> `ssm_dt.bias`, `A_log` -> `ssm_a`, ...);
- `ssm_a = -exp(A_log)` (float32; A_log <= -104 gives -0: decay exactly 1);
- the zero-centred RMSNorm weights (input, post-attention, final, q/k norms) + 1: llama.cpp
  multiplies by the stored weight, transformers by (1 + w): the same float32 product;
  the gated norm of the linear attention (plain w) is copied;
- `conv1d.weight` [C, 1, 4] -> [C, 4].
Value heads are not reordered: that is only needed when key heads < value heads, which
this writer refuses (every qgpu shape has as many key heads as value heads).

Vocabulary (`tokenizer.ggml.*`): a BPE ("gpt2") table. A merged checkpoint with a
`tokenizer.json` gets the base's tokens and merges (pre-tokenizer "qwen35"); ids the base
config reserves beyond its tokenizer are "[PAD<id>]" (unused); the GPU tokens follow at
the recorded offset under the names the caller gives (the machine's: the protocol's
`V(0x0000)`, ..., `HALT`, runtime.gguf_export) as control tokens. The machine alone
has the GPU tokens only, and one inert merge (the format needs a non-empty list;
launches feed token ids, nothing is tokenized). qgpu's
`qgpu_merge.json` rides along as the string `qgpu.merge_info`, so the file alone is
enough to run launches (`runtime.llama_cpp`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qgpu.errors import QgpuError
from qgpu.model.config import LINEAR, QwenConfig
from qgpu.model.gguf_types import F32, TensorType, choose_type

ARCH = "qwen35"
INFO_KEY = "qgpu.merge_info"
ROW_BLOCK_BYTES = 64 << 20
DEFAULT_MROPE_SECTIONS = [11, 11, 10, 0]  # Qwen3.5's (convert_hf_to_gguf's default)
INERT_MERGE = "\u0120 \u0120"


class GgufError(QgpuError):
    """A checkpoint the GGUF writer cannot express, or a GGUF file qgpu cannot run."""


def _gguf():
    try:
        import gguf
    except ImportError:
        raise GgufError("the gguf package is not installed (pip install 'qgpu[gguf]' or "
                        "pip install gguf)") from None
    return gguf


def _plus_one(name: str) -> bool:
    return name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight")


def gguf_name(name: str, n_layers: int) -> str:
    """The GGUF tensor name of a Qwen3_5ForCausalLM parameter."""
    gguf = _gguf()
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN35, n_layers)
    if name.endswith(".dt_bias"):  # convert_hf_to_gguf renames it before mapping
        name = name[:-len(".dt_bias")] + ".dt_proj.bias"
    new = tmap.get_name(name, try_suffixes=(".weight", ".bias"))
    if new is None:
        raise GgufError(f"no GGUF name for tensor {name}")
    return new


def gguf_shape(name: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The numpy shape of the converted tensor."""
    if "conv1d" in name:
        return (shape[0], shape[-1])
    return tuple(shape)


def convert_block(name: str, block: np.ndarray) -> np.ndarray:
    """A block of rows of parameter `name` as llama.cpp stores it (float32)."""
    block = np.asarray(block, dtype=np.float32)
    if name.endswith(".A_log"):
        with np.errstate(under="ignore", over="ignore"):
            return -np.exp(block)
    if "conv1d" in name:
        return block.reshape(block.shape[0], block.shape[-1])
    if _plus_one(name):
        return block + np.float32(1)
    return block


@dataclass
class TokenTable:
    """tokenizer.ggml.* of the file."""

    tokens: list[str]
    types: list[int]
    merges: list[str]
    pre: str
    eos: int | None = None
    chat_template: str | None = None


def _chat_side(tokenizer: Path, tokens: list[str]) -> tuple[int | None, str | None]:
    """The text side's end-of-turn token and chat template, from the tokenizer_config.json
    (or chat_template.jinja) beside a merge's tokenizer.json: what llama.cpp's own
    programs need to chat with the file (llama-server, llama-cli)."""
    config_path = tokenizer.parent / "tokenizer_config.json"
    config = json.loads(config_path.read_text()) if config_path.is_file() else {}
    template = config.get("chat_template")
    jinja = tokenizer.parent / "chat_template.jinja"
    if template is None and jinja.is_file():
        template = jinja.read_text()
    eos = config.get("eos_token")
    if isinstance(eos, dict):
        eos = eos.get("content")
    ids = {t: i for i, t in enumerate(tokens)}
    return ids.get(eos), template if isinstance(template, str) else None


def token_table(config: QwenConfig, info: dict, names: list[str] | None = None,
                tokenizer: Path | None = None) -> TokenTable:
    """The vocabulary: the base's tokenizer (if any) below the GPU token offset, the
    circuit's tokens (`names`; default `<circuit:i>`; the machine's callers pass the
    protocol's names, runtime.gguf_export) from it on, then what a merge adds after them
    (its pad token, `<|qgpu_pad|>`, control)."""
    gguf = _gguf()
    T = gguf.TokenType
    if names is None:
        circuit = info.get("circuit", "circuit")
        names = [f"<{circuit}:{i}>" for i in range(int(info.get("gpu_tokens", 0)))]
    names = list(names)
    offset = int(info.get("gpu_token_offset", 0))
    extra = config.vocab_size - offset - len(names)
    if extra < 0 or extra > 1 or (extra and info.get("pad_token") != config.vocab_size - 1):
        raise GgufError(f"vocabulary {config.vocab_size} != GPU token offset {offset} + "
                        f"{len(names)} GPU tokens (+ a merge's pad token)")
    tokens = [f"[PAD{i}]" for i in range(offset)]
    types = [int(T.UNUSED)] * offset
    merges, pre = [INERT_MERGE], "default"
    if offset and tokenizer is not None and tokenizer.is_file():
        body = json.loads(tokenizer.read_text())
        model = body.get("model", {})
        for text, i in model.get("vocab", {}).items():
            if i < offset:
                tokens[i], types[i] = text, int(T.NORMAL)
        for added in body.get("added_tokens", []):
            i = added["id"]
            if i < offset:
                tokens[i] = added["content"]
                types[i] = int(T.CONTROL if added.get("special") else T.USER_DEFINED)
        merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
        merges, pre = merges or [INERT_MERGE], "qwen35"
    tokens += names + ["<|qgpu_pad|>"] * extra
    types += [int(T.CONTROL)] * (len(names) + extra)
    if offset and tokenizer is not None and tokenizer.is_file():
        # a merge's tokenizer names its GPU tokens `<|gpu:NAME|>`: the same strings here,
        # so no GPU token shares a text token's string (llama.cpp refuses a vocabulary
        # with two tokens of one string: the protocol's `GO` is also a Qwen token)
        for added in body.get("added_tokens", []):
            if offset <= added["id"] < len(tokens):
                tokens[added["id"]] = added["content"]
    eos = offset + names.index("HALT") if "HALT" in names else None
    template = None
    if offset and tokenizer is not None and tokenizer.is_file():
        text_eos, template = _chat_side(tokenizer, tokens)
        eos = text_eos if text_eos is not None else eos   # launches never stop on eos
    seen: dict[str, int] = {}
    for i, text in enumerate(tokens):
        if seen.setdefault(text, i) != i:
            raise GgufError(f"tokens {seen[text]} and {i} are both {text!r}: llama.cpp "
                            f"needs every token string once")
    return TokenTable(tokens, types, merges, pre, eos, template)


def _mrope_sections(config: QwenConfig) -> list[int]:
    """The config's mrope sections; for a rotary dimension they do not fit (ggml asserts
    their sum <= the rotated dims: small test shapes) one section: text positions give
    every section the same position, so the split changes nothing."""
    pairs = config.rotary_dim // 2
    sections = config.rope_parameters.get("mrope_section") or DEFAULT_MROPE_SECTIONS
    sections = list(sections) + [0] * (4 - len(sections))
    return sections if sum(sections) <= pairs else [pairs, 0, 0, 0]


def _file_type(types: Iterable[TensorType]):
    gguf = _gguf()
    names = {t.name for t in types}
    if names <= {"F32"}:
        return gguf.LlamaFileType.ALL_F32
    return gguf.LlamaFileType.MOSTLY_BF16 if "BF16" in names else gguf.LlamaFileType.MOSTLY_F16


def _metadata(w, config: QwenConfig, info: dict, table: TokenTable, file_type) -> None:
    c = config
    if c.linear_num_key_heads != c.linear_num_value_heads:
        raise GgufError(f"{c.linear_num_key_heads} key heads != {c.linear_num_value_heads} "
                        f"value heads: the writer does not reorder value heads")
    w.add_name(f"qgpu {info.get('circuit', 'circuit')}")
    w.add_file_type(file_type)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_key_length(c.head_dim)
    w.add_value_length(c.head_dim)
    w.add_rope_freq_base(c.rope_theta)
    w.add_rope_dimension_count(c.rotary_dim)
    w.add_rope_dimension_sections(_mrope_sections(c))
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_ssm_conv_kernel(c.linear_conv_kernel_dim)
    w.add_ssm_state_size(c.linear_key_head_dim)
    w.add_ssm_group_count(c.linear_num_key_heads)
    w.add_ssm_time_step_rank(c.linear_num_value_heads)
    w.add_ssm_inner_size(c.linear_value_head_dim * c.linear_num_value_heads)
    w.add_array(f"{ARCH}.attention.recurrent_layers", [t == LINEAR for t in c.layer_types])
    w.add_full_attention_interval(4)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(table.pre)
    w.add_token_list(table.tokens)
    w.add_token_types(table.types)
    w.add_token_merges(table.merges)
    if table.eos is not None:
        w.add_eos_token_id(table.eos)
    if table.chat_template is not None:
        w.add_chat_template(table.chat_template)
    w.add_add_bos_token(False)
    w.add_string(INFO_KEY, json.dumps(info))


def write_gguf(out: str | Path, config: QwenConfig, info: dict, names: Iterable[str],
               rows: Callable[[str], Iterable[np.ndarray]],
               shapes: dict[str, tuple[int, ...]], table: TokenTable,
               progress: Callable[[str], None] | None = None,
               types: dict[str, TensorType] | None = None) -> int:
    """Write the GGUF file: `names` the HF parameter names in file order, `rows(name)`
    their float32 row blocks, `shapes[name]` their HF shapes, `types[name]` the type each
    is written in (default float32). Returns the bytes written."""
    gguf = _gguf()
    out = Path(out)
    names = list(names)
    types = {n: (types or {}).get(n, F32) for n in names}
    w = gguf.GGUFWriter(out, ARCH)
    _metadata(w, config, info, table, _file_type(types.values()))
    planned = []
    for name in names:
        shape, kind = gguf_shape(name, shapes[name]), types[name]
        nbytes = kind.nbytes(shape)
        w.add_tensor_info(gguf_name(name, config.num_hidden_layers), shape,
                          np.dtype(kind.numpy), nbytes,
                          raw_dtype=getattr(gguf.GGMLQuantizationType, kind.name))
        planned.append((name, shape, nbytes, kind))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    for name, shape, nbytes, kind in planned:
        if progress:
            progress(name)
        w.write_padding(fout, fout.tell())
        written = 0
        for block in rows(name):
            data = kind.encode(convert_block(name, block))
            data.tofile(fout)
            written += data.nbytes
        if written != nbytes:
            raise GgufError(f"{name}: wrote {written} bytes for shape {shape}")
        w.write_padding(fout, nbytes)
    w.tensors[0].clear()
    w.flush()
    size = fout.tell()
    w.close()
    return size


def weights_to_gguf(weights, info: dict, out: str | Path, names: list[str] | None = None,
                    tokenizer: Path | None = None, policy: str = "exact") -> int:
    """A QwenWeights in memory (a compiled circuit, a merge) as a GGUF file. names: the
    circuit's token names (token_table); policy: model.gguf_types."""
    from qgpu.model.checkpoint import row_blocks
    from qgpu.model.weights import expected_shapes

    config = weights.config
    shapes = expected_shapes(config)
    table = token_table(config, info, names, tokenizer)

    def rows(n):
        return row_blocks(weights[n], ROW_BLOCK_BYTES)

    layers = info.get("circuit_layers")
    types = {n: choose_type(n, "F32", shapes[n], lambda n=n: rows(n), policy,
                            layers) for n in shapes}
    return write_gguf(out, config, info, shapes, rows, shapes, table, types=types)


def checkpoint_to_gguf(model: str | Path, out: str | Path, info: dict,
                       names: list[str] | None = None,
                       progress: Callable[[str], None] | None = None,
                       policy: str = "exact") -> dict:
    """A checkpoint directory (config.json, model.safetensors; a tokenizer.json is used
    for the tokens below the circuit's) as a GGUF file, one tensor at a time. info: its
    qgpu_merge.json body (stored in the file)."""
    from qgpu.model.checkpoint import (
        checkpoint_files,
        read_safetensors_header,
        read_tensor,
        text_name,
    )
    from qgpu.model.weights import expected_shapes

    model, out = Path(model), Path(out)
    if out.exists():
        raise GgufError(f"{out} exists")
    config = QwenConfig.from_hf_dict(json.loads((model / "config.json").read_text()))
    shapes = expected_shapes(config)
    where = {}
    for path in checkpoint_files(model):
        header, start = read_safetensors_header(path)
        for stored, entry in header.items():
            name = text_name(stored) if stored != "__metadata__" else None
            if name in shapes:
                where[name] = (path, entry, start)
    missing = [n for n in shapes if n not in where]
    if missing:
        raise GgufError(f"{model}: {len(missing)} tensors missing, e.g. {missing[0]}")

    def rows(name):
        path, entry, start = where[name]
        if entry["dtype"] != "F32" or len(entry["shape"]) < 2:
            yield read_tensor(path, entry, start)
            return
        shape = tuple(entry["shape"])
        data = np.memmap(path, dtype="<f4", mode="r", offset=start + entry["data_offsets"][0],
                         shape=shape)
        step = max(1, ROW_BLOCK_BYTES // (4 * int(np.prod(shape[1:]))))
        for a in range(0, shape[0], step):
            yield np.array(data[a:a + step], dtype=np.float32)

    table = token_table(config, info, names, tokenizer=model / "tokenizer.json")
    layers = info.get("circuit_layers")
    types = {n: choose_type(n, where[n][1]["dtype"], shapes[n], lambda n=n: rows(n), policy,
                            layers) for n in shapes}
    size = write_gguf(out, config, info, shapes, rows, shapes, table, progress, types)
    kinds = sorted({t.name for t in types.values()})
    return {"out": str(out), "bytes": size, "layers": config.num_hidden_layers,
            "types": {k: sum(t.name == k for t in types.values()) for k in kinds},
            "hidden": config.hidden_size, "vocab": config.vocab_size,
            "gpu_token_offset": info.get("gpu_token_offset", 0)}

