"""runtime.llama_cpp: launches on llama.cpp (through `llama-cpp-python`'s ctypes binding)
from a GGUF file written by `qgpu export-gguf` (model.gguf): llama.cpp computes every
layer with its own kernels (ggml's matrix products, exp, sigmoid, softplus, SiLU, RMS and
L2 norms, its gated delta rule: chunked over a batch of tokens, recurrent one token at a
time); qgpu only feeds token ids and takes the argmax of the logits llama.cpp returns.

    machine = load_gguf_machine("machine.gguf")        # a runtime.checkpoint.CheckpointMachine
    run = generate_launch(machine, program, 1, 4, memory)   # greedy, one token per decode
    run.memory                                          # read from llama.cpp's state

`LlamaCppEngine` has the engine API the runtime drives (`new_state`, `consume`,
`step_greedy`, `forced_greedy`): one llama.cpp context, one sequence; a new state clears
the context's memory. The results are read from the model's recurrent state as on the
other engines: `llama_state_seq_get_data_ext` (recurrent part only) serialises every
linear-attention layer's state S, which `LlamaState.recurrent` parses back into qgpu's
layout [Hv, dk, dv] (ggml keeps S with the key index fastest: [H][dv][dk] in memory).
Greedy: the first largest logit (numpy's argmax), as qgpu's engines.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qgpu.errors import LaunchError
from qgpu.model.gguf import INFO_KEY, GgufError

GGML_TYPE_F32 = 0
DEFAULT_BATCH = 512


def _binding():
    try:
        import llama_cpp
    except ImportError:
        raise GgufError("llama-cpp-python is not installed (pip install llama-cpp-python; "
                        "it builds llama.cpp from source, ~15 min on 2 cores)") from None
    return llama_cpp


_LOG_KEEP = []


def _quiet(lib) -> None:
    """llama.cpp's log: errors only (to stderr)."""
    if _LOG_KEEP:
        return

    def log(level, text, _user):
        if level == 4 and text:  # GGML_LOG_LEVEL_ERROR
            os.write(2, text)

    callback = lib.llama_log_callback(log)
    _LOG_KEEP.append(callback)
    lib.llama_log_set(callback, ctypes.c_void_p())


def llama_cpp_version() -> str:
    lib = _binding()
    return getattr(lib, "__version__", "?")


class LlamaState:
    """The sequence in the engine's context: its position, and the recurrent state read
    back from llama.cpp on demand (`recurrent[layer]`: [Hv, dk, dv] float32)."""

    def __init__(self, engine: LlamaCppEngine, epoch: int):
        self.engine, self.epoch, self.position = engine, epoch, 0
        self._recurrent: dict | None = None

    @property
    def recurrent(self) -> dict[int, np.ndarray]:
        if self._recurrent is None:
            self._recurrent = self.engine.read_recurrent(self)
        return self._recurrent


class LlamaCppEngine:
    """One llama.cpp model and context over a GGUF file (float32, CPU)."""

    weights = None  # held by llama.cpp (CheckpointMachine.inner compares weights)

    def __init__(self, path: str | Path, n_ctx: int = 16384, n_batch: int = DEFAULT_BATCH,
                 threads: int | None = None):
        lib = self.lib = _binding()
        _quiet(lib)
        lib.llama_backend_init()
        self.path = Path(path)
        if not self.path.is_file():
            raise GgufError(f"{path}: no such GGUF file")
        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = 0
        start = time.perf_counter()
        self.model = lib.llama_model_load_from_file(str(self.path).encode(), mparams)
        if not self.model:
            raise GgufError(f"{path}: llama.cpp could not load it (not a qwen35 GGUF?)")
        self.load_seconds = time.perf_counter() - start
        self.vocab = lib.llama_model_get_vocab(self.model)
        self.n_vocab = lib.llama_vocab_n_tokens(self.vocab)
        self.n_ctx, self.n_batch = int(n_ctx), int(n_batch)
        # one thread unless told: ggml's threads spin at barriers, and on a busy 2-core
        # machine (load 9) 2 threads took 145 ms per decode of the 2B-shape adder demo
        # against 11 ms with 1 (QGPU_LLAMA_THREADS=N for an idle machine)
        threads = threads or int(os.environ.get("QGPU_LLAMA_THREADS", 0)) or 1
        cparams = lib.llama_context_default_params()
        cparams.n_ctx, cparams.n_batch, cparams.n_ubatch = self.n_ctx, self.n_batch, self.n_batch
        cparams.n_seq_max, cparams.n_outputs_max_per_seq = 1, 0
        cparams.n_threads = cparams.n_threads_batch = threads
        cparams.type_k = cparams.type_v = GGML_TYPE_F32
        cparams.no_perf = True
        self.ctx = lib.llama_init_from_model(self.model, cparams)
        if not self.ctx:
            raise GgufError(f"{path}: llama.cpp could not create a context (n_ctx {n_ctx})")
        self.batch = lib.llama_batch_init(self.n_batch, 0, 1)
        self.layer_types = self._layer_types()
        self.epoch = 0

    # -- metadata --
    def meta(self, key: str) -> str | None:
        size = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(size)
            n = self.lib.llama_model_meta_val_str(self.model, key.encode(), buf, size)
            if n < 0:
                return None
            if n < size:
                return buf.value.decode()
            size = n + 1

    def _layer_types(self) -> list[bool]:
        """Which layers are recurrent (linear attention), from the file's metadata."""
        from gguf import GGUFReader

        reader = GGUFReader(self.path)
        field = reader.get_field("qwen35.attention.recurrent_layers")
        if field is None:
            raise GgufError(f"{self.path}: no qwen35.attention.recurrent_layers")
        return [bool(field.parts[i][0]) for i in field.data]

    def __del__(self):
        lib = getattr(self, "lib", None)
        if lib is None:
            return
        if getattr(self, "batch", None) is not None:
            lib.llama_batch_free(self.batch)
        if getattr(self, "ctx", None):
            lib.llama_free(self.ctx)
        if getattr(self, "model", None):
            lib.llama_model_free(self.model)

    # -- the engine API --
    def new_state(self) -> LlamaState:
        self.lib.llama_memory_clear(self.lib.llama_get_memory(self.ctx), True)
        self.epoch += 1
        return LlamaState(self, self.epoch)

    def _live(self, state: LlamaState) -> None:
        if state.epoch != self.epoch:
            raise LaunchError("this llama.cpp state is stale: the engine started a new one")
        state._recurrent = None

    def _decode(self, state: LlamaState, tokens: Sequence[int], outputs: bool) -> None:
        b = self.batch
        for i, t in enumerate(tokens):
            if not 0 <= int(t) < self.n_vocab:
                raise LaunchError(f"token id {t} is outside the model's {self.n_vocab}")
            b.token[i] = int(t)
            b.pos[i] = state.position + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if outputs or i == len(tokens) - 1 else 0
        b.n_tokens = len(tokens)
        if state.position + len(tokens) > self.n_ctx:
            raise LaunchError(f"the launch needs more than the context's {self.n_ctx} "
                              f"positions")
        rc = self.lib.llama_decode(self.ctx, b)
        if rc != 0:
            raise LaunchError(f"llama_decode failed (code {rc})")
        state.position += len(tokens)

    def _argmax(self, n: int) -> list[int]:
        ptr = self.lib.llama_get_logits(self.ctx)
        logits = np.ctypeslib.as_array(ptr, shape=(n, self.n_vocab))
        return [int(t) for t in np.argmax(logits, axis=1)]

    def consume(self, state: LlamaState, tokens: Sequence[int]) -> None:
        self._live(state)
        for a in range(0, len(tokens), self.n_batch):
            self._decode(state, tokens[a:a + self.n_batch], outputs=False)

    def step_greedy(self, state: LlamaState, token: int) -> int:
        self._live(state)
        self._decode(state, [token], outputs=True)
        return self._argmax(1)[0]

    def forced_greedy(self, state: LlamaState, tokens: Sequence[int]) -> list[int]:
        """Teacher forcing: the tokens in batches, the argmax after every one of them."""
        self._live(state)
        out: list[int] = []
        for a in range(0, len(tokens), self.n_batch):
            chunk = tokens[a:a + self.n_batch]
            self._decode(state, chunk, outputs=True)
            out += self._argmax(len(chunk))
        return out

    # -- the recurrent state --
    def state_bytes(self) -> bytes:
        lib, flags = self.lib, self.lib.LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY
        size = lib.llama_state_seq_get_size_ext(self.ctx, 0, flags)
        buf = (ctypes.c_uint8 * size)()
        n = lib.llama_state_seq_get_data_ext(self.ctx, buf, size, 0, flags)
        return bytes(buf[:n])

    def read_recurrent(self, state: LlamaState) -> dict[int, np.ndarray]:
        if state.epoch != self.epoch:
            raise LaunchError("this llama.cpp state is stale: the engine started a new one")
        return parse_recurrent(self.state_bytes(), self.layer_types, self.ssm_shape())

    def ssm_shape(self) -> tuple[int, int]:
        heads = int(self.meta("qwen35.ssm.time_step_rank"))
        dim = int(self.meta("qwen35.ssm.state_size"))
        return heads, dim


def parse_recurrent(blob: bytes, recurrent: list[bool], shape: tuple[int, int]
                    ) -> dict[int, np.ndarray]:
    """The S of every linear-attention layer from llama.cpp's serialised recurrent memory
    (llama_context::state_seq_get_data: the io magic and the sequence id, then
    llama_memory_recurrent::state_write for one sequence: cell count, per cell its
    position and 0 sequence ids, s_trans, n_layer, then per recurrent layer the conv rows
    (type, row size, data), then per recurrent layer the S rows)."""
    heads, dim = shape
    off = 0

    def take(fmt: str):
        nonlocal off
        values = struct.unpack_from("<" + fmt, blob, off)
        off += struct.calcsize("<" + fmt)
        return values

    _magic, _seq = take("Ii")
    (cells,) = take("I")
    if cells != 1:
        raise GgufError(f"llama.cpp state holds {cells} cells for the sequence, expected 1")
    _pos, n_seq = take("iI")
    off += 4 * n_seq
    s_trans, n_layer = take("II")
    if s_trans or n_layer != len(recurrent):
        raise GgufError(f"llama.cpp state: s_trans {s_trans}, {n_layer} layers "
                        f"(expected 0, {len(recurrent)})")
    layers = [i for i, r in enumerate(recurrent) if r]
    for _ in layers:  # conv windows
        kind, row = take("iQ")
        off += row
    out = {}
    for il in layers:
        kind, row = take("iQ")
        if kind != GGML_TYPE_F32 or row != 4 * heads * dim * dim:
            raise GgufError(f"llama.cpp state layer {il}: type {kind}, row {row} bytes "
                            f"(expected float32 {heads} x {dim} x {dim})")
        s = np.frombuffer(blob, dtype="<f4", count=heads * dim * dim, offset=off)
        out[il] = s.reshape(heads, dim, dim).transpose(0, 2, 1).copy()
        off += row
    return out


def gguf_info(engine: LlamaCppEngine) -> dict:
    text = engine.meta(INFO_KEY)
    if text is None:
        raise GgufError(f"{engine.path}: no {INFO_KEY} (not written by qgpu export-gguf)")
    return json.loads(text)


def load_gguf_machine(path: str | Path, n_ctx: int = 16384, n_batch: int = DEFAULT_BATCH):
    """The machine of a GGUF file (qgpu export-gguf of a merged or exported machine) on
    llama.cpp, as a runtime.checkpoint.CheckpointMachine (engine: OffsetEngine over a
    LlamaCppEngine)."""
    from qgpu.runtime.checkpoint import CheckpointMachine, OffsetEngine, spec_of

    engine = LlamaCppEngine(path, n_ctx=n_ctx, n_batch=n_batch)
    info = gguf_info(engine)
    spec, ops = spec_of(info, path)
    wrapped = OffsetEngine(engine, info["gpu_token_offset"], info["gpu_tokens"])
    return CheckpointMachine(None, info, wrapped, spec, ops, Path(path))
