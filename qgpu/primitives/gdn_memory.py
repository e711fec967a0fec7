"""primitives.gdn_memory: Gated DeltaNet heads used as storage.

`row_memory` turns GDN value heads into a table of rows (docs/design.md section 1):
- stores: row i of the state of each head = 32 * (b0, 1-b0, b1, 1-b1, ...) for the data
  bits written at address i, and BALLAST = 2^22 in the last column; unwritten rows are
  0. Up to dk rows of dv/2 - 1 bits.
- the ballast makes the read's norm independent of the data: RMSNormGated sums the
  squares of the head's read, 32 q per stored 1 (q = dk^-0.5 for dk = 128 has 24
  significant bits), and without the ballast that sum depended on *where* the n nonzero
  elements lie (numpy's pairwise sum keeps 8 accumulators by position mod 8, torch its
  own lanes): for some n (32 bits per head: registers, the result queue, memory records)
  one stored value read back one ulp (2^-23 relative) off another. The ballast's square
  (BALLAST q)^2 is so large that all the data squares together stay below a quarter of
  its ulp, so the sum is that one square in *any* order, the same float for every row.
- uses: value heads `heads` (copies of one table, written together, each with its own
  read address and output dims); their key heads' q and k channels, the v channels
  (2 per bit), z, b, a, A_log/dt_bias of those heads, out_proj columns of those heads.
- write: k = KEY * (one-hot write address), KEY = 48 - l2norm makes it exactly e_i, in
  transformers (x * rsqrt(sum x^2 + 1e-6)) and in llama.cpp (rms_norm(x, eps / dk) then
  a scale by 1/sqrt(dk): with KEY = 32 that gives (1 - 2^-24) e_i for dk = 32 or 128, so
  every stored value came back off by 2^-24 relative, the ballast by 0.25) - with beta = 1
  (b = 32 >= 16.64 so sigmoid(b) = 1 exactly): the delta rule computes
  row + 1 * (v - row), exactly v for these small integers: a write, or an overwrite. A
  token whose address group is all 0 has k = 0 and leaves the state bit-unchanged.
- read (after the write, in the same step): q = KEY * e_j gives row j * 2^-3.5 per
  element; RMSNormGated erases the magnitude, so data has a constant norm per head (each
  bit is a pair (b, 1-b)) and the read of any written row is the same float pattern.
  `read_gain` picks the out_proj gain that lands each bit in its output dim as exactly +-1
  in float32 on both transformers paths (prefill's multiply by dk^-0.5 and decode's divide
  by sqrt(dk); llama.cpp scales the read S^T q by dk^-0.5, the prefill path's product).
  An unwritten row (or a query of all 0) reads as 0.
- clear: with `clear` (a 0/1 dim), decay is exp(-exp(0) * softplus(a)) with
  a = 128 * (2 clear - 1): exactly 0 (the whole head cleared before the write) when
  clear = 1, exactly 1 otherwise. Without it A_log = -110 makes the decay exactly 1.
- all q/k/v channels pass the conv untouched (tap [0,0,0,1]) and SiLU unchanged: their
  values are 0, 32 or KEY (silu(x) = x for x >= 16.64); `token_history` uses other taps.
"""

from __future__ import annotations

import numpy as np

from qgpu.model import layers
from qgpu.model.config import QwenConfig
from qgpu.model.weights import QwenWeights
from qgpu.primitives import CircuitError

KEY = 48.0  # l2norm(48 e_i) == e_i exactly in transformers and llama.cpp; silu(48) == 48
VALUE = 32.0
BALLAST = 2.0 ** 22  # in the last value column of every written row (see above)
GATE = 32.0  # silu(32) == 32 exactly: z is a constant power-of-two gain
OPEN = 32.0  # in_proj_b on the constant dim: sigmoid(32) == 1.0 exactly
F32 = np.float32


def read_gain(config: QwenConfig, n_bits: int) -> float:
    """out_proj gain g with fl(y * g) == 1.0 exactly for the read of a written bit on both
    query-scaling paths, where y is what RMSNormGated outputs for it."""
    dk, dv = config.linear_key_head_dim, config.linear_value_head_dim
    if 2 * n_bits > dv - 2:
        raise CircuitError(f"{n_bits} bits exceed a head's {dv // 2 - 1}")
    pattern = np.zeros(dv, F32)
    pattern[0:2 * n_bits:2] = VALUE
    pattern[dv - 1] = BALLAST
    unit = layers.l2norm(np.eye(1, dk, dtype=F32) * F32(KEY))[0, 0]
    outputs = []
    for q in (unit / F32(dk ** 0.5), unit * F32(dk ** -0.5)):  # decode divides, prefill multiplies
        o = pattern * q
        big = np.float64(o[dv - 1]) ** 2
        if n_bits * np.float64(o[0]) ** 2 > np.spacing(F32(big)) / 4:
            raise CircuitError(f"the ballast does not dominate {n_bits} bits' squares")
        y = layers.rms_norm_gated(o[None], np.full((1, dv), GATE, F32), np.ones(dv, F32),
                             config.rms_norm_eps)[0, 0]
        outputs.append(y)
    guess = F32(1) / outputs[0]
    candidates, up, down = [guess], guess, guess
    for _ in range(64):  # a few ulps around 1/y
        up, down = np.nextafter(up, F32(np.inf)), np.nextafter(down, F32(-np.inf))
        candidates += [up, down]
    for cand in candidates:
        if all(F32(y * cand) == F32(1) for y in outputs):
            return float(cand)
    raise CircuitError(f"no exact read gain for {n_bits} bits in heads of {dk}x{dv}")


def _head_rows(config: QwenConfig, head: int):
    c = config
    key_head = head // c.value_heads_per_key_head
    q = slice(key_head * c.linear_key_head_dim, (key_head + 1) * c.linear_key_head_dim)
    k = slice(c.key_dim + q.start, c.key_dim + q.stop)
    v0 = 2 * c.key_dim + head * c.linear_value_head_dim
    return q, k, slice(v0, v0 + c.linear_value_head_dim)


def _claim_head(weights: QwenWeights, layer: int, head: int) -> None:
    c = weights.config
    if c.layer_types[layer] != "linear_attention":
        raise CircuitError(f"layer {layer} is not a Gated DeltaNet layer")
    if not 0 <= head < c.linear_num_value_heads:
        raise CircuitError(f"layer {layer} has no value head {head}")
    _, _, v = _head_rows(c, head)
    if np.any(weights.layer(layer, "linear_attn.in_proj_qkv.weight")[v]):
        raise CircuitError(f"layer {layer} head {head} is already in use")


def _set_head_common(weights, layer, head, one, clear):
    c = weights.config
    p = f"model.layers.{layer}.linear_attn."
    dv = c.linear_value_head_dim
    z = weights[p + "in_proj_z.weight"]
    z[head * dv:(head + 1) * dv, :] = 0
    z[head * dv:(head + 1) * dv, one] = GATE
    weights[p + "in_proj_b.weight"][head, one] = OPEN
    weights[p + "norm.weight"][:] = 1.0
    conv = weights[p + "conv1d.weight"]
    q, k, v = _head_rows(c, head)
    for rows in (q, k, v):
        conv[rows, 0, :] = 0
        conv[rows, 0, -1] = 1.0
    if clear is None:
        weights[p + "A_log"][head] = -110.0  # decay exp(-exp(-110) * ...) == 1 exactly
        weights[p + "dt_bias"][head] = 0.0
    else:
        weights[p + "A_log"][head] = 0.0
        weights[p + "dt_bias"][head] = 0.0
        a = weights[p + "in_proj_a.weight"]
        a[head, one] = -128.0
        a[head, clear] = 256.0


def row_memory(weights: QwenWeights, layer: int, heads: list[int], *, one: int,
               write_address: list[int], data: list[int], read_addresses: list[list[int]],
               outputs: list[list[int]], clear: int | None = None) -> None:
    """A table in GDN heads `heads` (all written together; head n reads the row named by
    the one-hot group read_addresses[n] and adds its bits, +-1, to outputs[n]).

    write_address: one-hot dims (row i <- dim write_address[i]); data: +-1 bit dims.
    """
    c = weights.config
    if len(read_addresses) != len(heads) or len(outputs) != len(heads):
        raise CircuitError("row_memory needs one read address group and output list per head")
    if len(write_address) > c.linear_key_head_dim:
        raise CircuitError(f"{len(write_address)} rows exceed the key dim {c.linear_key_head_dim}")
    if 2 * len(data) > c.linear_value_head_dim - 2:
        raise CircuitError(f"{len(data)} bits exceed a head's {c.linear_value_head_dim // 2 - 1}"
                           f" (value dim {c.linear_value_head_dim}, the ballast column)")
    p = f"model.layers.{layer}.linear_attn."
    qkv, out_proj = weights[p + "in_proj_qkv.weight"], weights[p + "out_proj.weight"]
    gain = read_gain(c, len(data))
    dv = c.linear_value_head_dim
    for n, head in enumerate(heads):
        _claim_head(weights, layer, head)
        q, k, v = _head_rows(c, head)
        if np.any(qkv[k]) or np.any(qkv[q]):
            raise CircuitError(f"layer {layer}: the key head of value head {head} is in use")
        if len(read_addresses[n]) > c.linear_key_head_dim or len(outputs[n]) != len(data):
            raise CircuitError(f"head {head}: read address or output width does not fit")
        for row, dim in enumerate(write_address):
            qkv[k.start + row, dim] = KEY
        for row, dim in enumerate(read_addresses[n]):
            qkv[q.start + row, dim] = KEY
        for bit, dim in enumerate(data):  # pair (b, 1-b) * 32, b = (x + 1) / 2
            qkv[v.start + 2 * bit, [dim, one]] = [VALUE / 2, VALUE / 2]
            qkv[v.start + 2 * bit + 1, [dim, one]] = [-VALUE / 2, VALUE / 2]
        qkv[v.start + dv - 1, one] = BALLAST
        for bit, dim in enumerate(outputs[n]):
            out_proj[dim, head * dv + 2 * bit] = gain
            out_proj[dim, head * dv + 2 * bit + 1] = -gain
        _set_head_common(weights, layer, head, one, clear)


def latch(weights: QwenWeights, layer: int, head: int, *, one: int, set_flag: int,
          data: list[int], outputs: list[int]) -> None:
    """A one-row memory: tokens whose 0/1 dim `set_flag` is 1 store `data`; every token
    reads the latest stored value (its own, if it sets it) into `outputs` as +-1 bits."""
    row_memory(weights, layer, [head], one=one, write_address=[set_flag], data=data,
               read_addresses=[[one]], outputs=[outputs])


def token_history(weights: QwenWeights, layer: int, head: int, *, one: int, lag: int,
                  data: list[int], outputs: list[int]) -> None:
    """Every token sees the +-1 bits `data` of the token `lag` (1..K-1) positions back, as
    +-1 in `outputs` (0 while there is no such token): a self-describing record's position.
    The value channels take conv tap K-1-lag; every token overwrites row 0 and reads it."""
    k_size = weights.config.linear_conv_kernel_dim
    if not 1 <= lag < k_size:
        raise CircuitError(f"lag {lag} is outside the conv window 1..{k_size - 1}")
    row_memory(weights, layer, [head], one=one, write_address=[one], data=data,
               read_addresses=[[one]], outputs=[outputs])
    _, _, v = _head_rows(weights.config, head)
    conv = weights[f"model.layers.{layer}.linear_attn.conv1d.weight"]
    conv[v, 0, :] = 0
    conv[v, 0, k_size - 1 - lag] = 1.0
