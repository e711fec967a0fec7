"""A realistic, exact compiled model for engine speed work: a register machine stacked over
many Gated DeltaNet + SwiGLU layers at Qwen3.5-2B per-layer shapes, built only from the
circuit primitives (row_memory, step, MlpWriter, NormLedger).

Residual: the constant one, 4 ballast dims, 16 registers of 16 +-1 bits, a one-hot
address group of 128 dims, and 16 x 12 scratch dims. Every GDN layer stores 12 bits of a
register in each of its 16 heads (row = the token's address, written then read), so each
head reads its row back into scratch at +-sqrt(hidden); the layer's MLP adds the read
value to a register in place (16-bit adders built from steps, about 2,240 units with 2-35
nonzeros each) and clears the scratch. Norms stay exact powers of two throughout (mean
square 64 before the mixer, 256 after it), so every sum is exact and the reference, the
fast engine and transformers must agree bit for bit. The output head holds 65,536 value
tokens (17 nonzeros each: the bits of register 0 and the constant) and `extra` other
tokens (17 nonzeros, never the argmax); the model answers each token with the value of
register 0 after the last layer. A zero full-attention layer ends the stack.
"""

from __future__ import annotations

import numpy as np

from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.weights import EMBED, LM_HEAD, QwenWeights
from qgpu.primitives import MlpWriter
from qgpu.primitives.gdn_memory import row_memory
from qgpu.primitives.mlp import step

REGISTERS, BITS, STORED_BITS, ADDRESSES = 16, 16, 12, 128
VALUES = 2 ** BITS


def _hash_bits(token: np.ndarray, register: int) -> np.ndarray:
    """[tokens, BITS] 0/1 bits of a register's initial value for each token."""
    v = (token.astype(np.int64) * (2 * register + 1) + 7919 * register) % VALUES
    return (v[:, None] >> np.arange(BITS)) & 1


def build_bench_model(gdn_layers: int = 36, hidden: int = 1024, extra: int = 10_240,
                      seed: int = 0) -> QwenWeights:
    if hidden not in (1024, 4096):
        raise ValueError("hidden must be 1024 or 4096 (the scratch gain sqrt(hidden) must "
                         "be a power of two for exact norms)")
    vocab = VALUES + extra
    config = QwenConfig(hidden_size=hidden, num_hidden_layers=gdn_layers + 1,
                        layer_types=[LINEAR] * gdn_layers + [FULL], vocab_size=vocab,
                        intermediate_size=6144, linear_num_key_heads=16,
                        linear_num_value_heads=16, linear_key_head_dim=128,
                        linear_value_head_dim=128, linear_conv_kernel_dim=4,
                        num_attention_heads=8, num_key_value_heads=2, head_dim=256,
                        tie_word_embeddings=False)
    w = QwenWeights.zeros(config)
    one, ballast = 0, [1, 2, 3, 4]
    regs = [list(range(5 + BITS * r, 5 + BITS * (r + 1))) for r in range(REGISTERS)]
    addr = list(range(regs[-1][-1] + 1, regs[-1][-1] + 1 + ADDRESSES))
    base = addr[-1] + 1
    scratch = [list(range(base + STORED_BITS * h, base + STORED_BITS * (h + 1)))
               for h in range(16)]
    gain = float(np.sqrt(hidden))  # reads of +-gain: 192 gain^2 = 192 hidden

    tokens = np.arange(vocab)
    emb = np.zeros((vocab, hidden), np.float32)
    emb[:, one] = 1
    for r in range(REGISTERS):
        bits = (tokens[:, None] >> np.arange(BITS)) & 1 if r == 0 else _hash_bits(tokens, r)
        emb[:, regs[r]] = 2 * bits - 1
    emb[tokens, np.array(addr)[tokens % ADDRESSES]] = 1
    deficit = 64 * hidden - (1 + REGISTERS * BITS + 1)
    emb[:, ballast] = _four_squares(deficit)
    w[EMBED] = emb
    for name in w.tensors:
        if name.endswith("layernorm.weight") or name == "model.norm.weight":
            w.tensors[name][:] = 7.0  # rsqrt(64) * 8 == 1: the identity

    for layer in range(gdn_layers):
        out_proj = w.layer(layer, "linear_attn.out_proj.weight")
        for head in range(16):
            source = regs[(head + layer) % REGISTERS][:STORED_BITS]
            row_memory(w, layer, [head], one=one, write_address=addr, data=source,
                       read_addresses=[addr], outputs=[scratch[head]])
            out_proj[:, head * 128:(head + 1) * 128] *= gain  # exact: a power of two
        w.layer(layer, "post_attention_layernorm.weight")[:] = 15.0  # mean square 256
        mlp = MlpWriter(w, layer)
        for head in range(16):
            _add_in_place(mlp, regs[head], scratch[head], gain, one)
        for dims in scratch:
            for d in dims:  # clear the scratch: -x exactly
                mlp.unit({one: 128.0}, {d: 1.0}, {d: -1.0 / 128})

    head = np.zeros((vocab, hidden), np.float32)
    values = np.arange(VALUES)
    head[:VALUES][:, regs[0]] = 2 * ((values[:, None] >> np.arange(BITS)) & 1) - 1
    head[:VALUES, one] = 1.0
    rng = np.random.default_rng(seed)
    others = np.arange(VALUES, vocab)
    for _ in range(16):  # 16 +-0.75 on random register bits, -1 on one: at most 11 < 17
        dims = rng.integers(BITS, REGISTERS * BITS, others.size) + 5
        head[others, dims] = rng.choice([-0.75, 0.75], others.size)
    head[others, one] = -1.0
    w[LM_HEAD] = head
    return w


def _add_in_place(mlp: MlpWriter, reg: list[int], read: list[int], gain: float, one: int):
    """reg <- (reg + read) mod 2^16 in place, read being +-gain bits of the low 12 bits.
    Bit j of the sum is a sawtooth of S_j (3 steps), then the old bit is subtracted."""
    form: dict[int, float] = {}
    for j in range(BITS):
        form[reg[j]] = form.get(reg[j], 0.0) + 2.0 ** j / 2
        form[one] = form.get(one, 0.0) + 2.0 ** j / 2
        if j < STORED_BITS:
            form[read[j]] = 2.0 ** j / (2 * gain)
            form[one] += 2.0 ** j / 2
        for k, sign in ((1, 2.0), (2, -2.0), (3, 2.0)):
            step(mlp, dict(form), float(k * 2 ** j), {reg[j]: sign}, one, name=f"add {j}")
        mlp.constant({reg[j]: -1.0}, one)
        mlp.unit({one: 128.0}, {reg[j]: 1.0}, {reg[j]: -1.0 / 128})


def _four_squares(n: int) -> list[float]:
    from qgpu.primitives.norm import four_squares
    return [float(v) for v in four_squares(n)]


def answers(weights: QwenWeights, tokens: list[int]) -> list[int]:
    """The model's answers computed in plain integers (what every engine must emit)."""
    gdn = weights.config.num_hidden_layers - 1
    out = []
    for t in tokens:
        regs = [t % VALUES] + [int((t * (2 * r + 1) + 7919 * r) % VALUES)
                               for r in range(1, REGISTERS)]
        for layer in range(gdn):
            reads = [regs[(h + layer) % REGISTERS] % 2 ** STORED_BITS for h in range(16)]
            regs = [(regs[h] + reads[h]) % VALUES for h in range(16)]
        out.append(regs[0])
    return out
