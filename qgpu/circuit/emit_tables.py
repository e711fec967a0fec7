"""circuit.emit_tables: the mixer side of the emitter, tables and counters in GDN heads.

A table is written through `primitives.gdn_memory.row_memory` (one call per segment of
dv/2 - 1 bits, all read copies of that segment at once) and then adjusted per head:
- raw reads: out_proj columns scaled by READ_SCALE (2^-20, a power of two, so the read
  of a written bit lands as exactly +-2^-20: fl(y * g * 2^-20) = 2^-20 fl(y * g));
- fixed rows (latches): the key or query channel of that row reads the `one` dim;
- lags: conv taps K-1-lag on the key, value (per part) or query channels (a query with
  several lags sums them: the caller makes sure at most one names a row);
- enable: in_proj_b = 64 e - 32 on the +-1 bit e: b = 32 (beta = 1) or -96 (beta = 0
  exactly: sigmoid underflows), and beta = 0 leaves the state bit-unchanged;
- clear: in_proj_a = 128 c: decay exp(-softplus(128)) = 0 exactly, or exp(-0) = 1;
- gate: in_proj_z = 16 g + 16: silu(32) = 32 or silu(0) = 0 (the read becomes 0);
- presence: one more stored pair (32, 0) from the `one` dim, read as the `found` bit.

A counter (docs/design.md section 2) is one head whose row 0 holds (b, C): reset (beta = 1)
writes (32, 2^18), a tick (beta = sigmoid(0) = 1/2 exactly) writes (0, 2^18), so b =
32 * 2^-n while C stays 2^18. C dominates the head's norm: b^2 is below half an ulp of
C^2, so RMSNormGated divides by the same float for every n, and (powers of two scaling
exactly) the read of b is exactly 2^-n times the read at n = 0. `counter_gain` picks the
out_proj gain that lands it as exactly COUNTER_SCALE * 2^-n on both query paths.
"""

from __future__ import annotations

import numpy as np

from qgpu.circuit.ir import (
    BINARY_OFFSET,
    BINARY_STEP,
    COUNTER_SCALE,
    READ_SCALE,
    BinaryKey,
    Counter,
    Ref,
    Table,
    bits_per_head,
)
from qgpu.model import layers
from qgpu.model.config import QwenConfig
from qgpu.model.weights import QwenWeights
from qgpu.primitives import CircuitError
from qgpu.primitives.gdn_memory import GATE, KEY, VALUE, _head_rows, row_memory

F32 = np.float32
COUNTER_BIG = 2.0 ** 18  # the C column: (32 / 2^18)^2 = 2^-26 < 2^-25 (half ulp, relative)
ENABLE_ON, ENABLE_OFF = 32.0, -96.0  # sigmoid: exactly 1 / exactly 0
PRESENT = -1  # placeholder dim of the presence bit in a segment's data list


def _prefix(layer: int) -> str:
    return f"model.layers.{layer}.linear_attn."


def _set_taps(conv: np.ndarray, rows, lags, k_size: int) -> None:
    conv[rows, 0, :] = 0.0
    for lag in lags:
        conv[rows, 0, k_size - 1 - lag] = 1.0


def emit_table(w: QwenWeights, layer: int, table: Table, key_heads: list[int], dims,
               one: int) -> None:
    c = w.config
    p = _prefix(layer)
    qkv, conv = w[p + "in_proj_qkv.weight"], w[p + "conv1d.weight"]
    out_proj = w[p + "out_proj.weight"]
    rep, dv, k_size = c.value_heads_per_key_head, c.linear_value_head_dim, c.linear_conv_kernel_dim
    wp = table.write_port
    stored = [(d, lag) for ref, lag in wp.value for d in dims(ref)]
    if table.presence:
        stored.append((PRESENT, 0))
    raw_dims = [dims(r.raw.ref) for r in table.reads]
    per_head = bits_per_head(dv)
    segments, banks = table.segments(dv), table.banks(c.linear_key_head_dim)
    bank_rows = min(table.rows, c.linear_key_head_dim)
    write_address = dims(wp.key)[:table.rows] if isinstance(wp.key, Ref) else []
    reads = table.reads
    for s, bank in ((s, b) for s in range(segments) for b in range(banks)):
        part = stored[s * per_head:(s + 1) * per_head]
        lo = s * per_head
        heads = [key_heads[(r * segments + s) * banks + bank] * rep for r in range(len(reads))]
        data = [one if d == PRESENT else d for d, _ in part]
        queries = [dims(r.query)[:table.rows] if isinstance(r.query, Ref) else []
                   for r in reads]
        outputs = [raw[lo:lo + len(part)] for raw in raw_dims]
        row_memory(w, layer, heads, one=one, write_address=write_address, data=data,
                   read_addresses=queries, outputs=outputs,
                   clear=None if wp.clear is None else dims(wp.clear)[0])
        first = bank * bank_rows
        for head, read in zip(heads, reads, strict=True):
            q, k, v = _head_rows(c, head)
            if isinstance(wp.key, int):
                qkv[k.start + wp.key, one] = KEY
            if isinstance(read.query, int):
                qkv[q.start + read.query, one] = KEY
            if isinstance(wp.key, BinaryKey):
                _binary_rows(qkv, k.start, bank_rows, wp.key, dims, one, first)
            if isinstance(read.query, BinaryKey):
                if len(read.query_lags) != 1:
                    raise ValueError(f"table {table.name}: a binary query reads one conv tap, "
                                     f"not {read.query_lags}")
                _binary_rows(qkv, q.start, bank_rows, read.query, dims, one, first)
            _set_taps(conv, k, [wp.key_lag], k_size)
            _set_taps(conv, q, read.query_lags, k_size)
            for i, (d, lag) in enumerate(part):
                rows = [v.start + 2 * i, v.start + 2 * i + 1]
                if d == PRESENT:  # the pair (32, 0) from the one dim
                    qkv[rows[0], :] = 0.0
                    qkv[rows[1], :] = 0.0
                    qkv[rows[0], one] = VALUE
                _set_taps(conv, rows, [lag], k_size)
            cols = slice(head * dv, (head + 1) * dv)
            out_proj[:, cols] *= F32(READ_SCALE)
            if wp.enable is not None:
                b = w[p + "in_proj_b.weight"]
                b[head, :] = 0.0
                b[head, one] = (ENABLE_ON + ENABLE_OFF) / 2
                b[head, dims(wp.enable)[0]] = (ENABLE_ON - ENABLE_OFF) / 2
            if wp.clear is not None:
                a = w[p + "in_proj_a.weight"]
                a[head, :] = 0.0
                a[head, dims(wp.clear)[0]] = 128.0
            if read.gate is not None:
                z = w[p + "in_proj_z.weight"]
                z[cols, :] = 0.0
                z[cols, one] = GATE / 2
                z[cols, dims(read.gate)[0]] = GATE / 2


def _binary_rows(qkv: np.ndarray, start: int, rows: int, key: BinaryKey, dims,
                 one: int, first: int = 0) -> None:
    """Key (or query) channel r = BINARY_STEP * S + BINARY_OFFSET, S = sum_i s_ri x_i +
    n v + 1 - 2n, for the +-1 bits x of `key.bits` (s_ri = +-1: bit i of r) and its +-1
    valid bit v: S = 1 (channel BINARY_KEY = 48) for the named row, S <= -1 (channel
    <= -208) for the others and for all rows when v = -1 (then the conv's SiLU gives
    exactly -0: the key is 48 e_r or 0; 48 because l2norm(48 e_r) is exactly e_r in
    llama.cpp's formula too). Integer weights on +-1 inputs: the sums are exact in any
    order. Only single-tap keys: a sum of taps would not be a key. Channel r of a bank
    decodes the table's row first + r (`Table.banks`)."""
    bits, (valid,) = dims(key.bits), dims(key.valid)
    n = len(bits)
    for r in range(rows):
        row = start + r
        for i, d in enumerate(bits):
            qkv[row, d] = BINARY_STEP * (1.0 if (first + r) >> i & 1 else -1.0)
        qkv[row, valid] = BINARY_STEP * n
        qkv[row, one] = BINARY_STEP * (1 - 2 * n) + BINARY_OFFSET


def counter_pattern(config: QwenConfig, n: int) -> np.ndarray:
    row = np.zeros(config.linear_value_head_dim, F32)
    row[0], row[1] = VALUE * 2.0 ** -n, COUNTER_BIG
    return row


def _head_outputs(config: QwenConfig, row: np.ndarray) -> list[np.ndarray]:
    """What RMSNormGated gives for a read of `row` on the decode and prefill paths."""
    dk, dv = config.linear_key_head_dim, config.linear_value_head_dim
    unit = layers.l2norm(np.eye(1, dk, dtype=F32) * F32(KEY))[0, 0]
    out = []
    for q in (unit / F32(dk ** 0.5), unit * F32(dk ** -0.5)):
        o = (row * q).astype(F32)
        out.append(layers.rms_norm_gated(o[None], np.full((1, dv), GATE, F32), np.ones(dv, F32),
                                    config.rms_norm_eps)[0])
    return out


def counter_gain(config: QwenConfig, limit: int) -> float:
    """The out_proj gain g with fl(y_n * g) == COUNTER_SCALE * 2^-n for n = 0..limit+1 on
    both query paths (checked, not assumed)."""
    target = F32(COUNTER_SCALE)
    y0 = _head_outputs(config, counter_pattern(config, 0))[0][0]
    guess = F32(target / y0)
    cands, up, down = [guess], guess, guess
    for _ in range(64):
        up, down = np.nextafter(up, F32(np.inf)), np.nextafter(down, F32(-np.inf))
        cands += [up, down]
    ys = [(n, y[0]) for n in range(limit + 2)
          for y in _head_outputs(config, counter_pattern(config, n))]
    for g in cands:
        if all(F32(y * g) == F32(COUNTER_SCALE * 2.0 ** -n) for n, y in ys):
            return float(g)
    raise CircuitError(f"no exact counter gain in heads of {config.linear_key_head_dim}x"
                       f"{config.linear_value_head_dim}")


def emit_counter(w: QwenWeights, layer: int, counter: Counter, key_head: int, dims,
                 one: int) -> None:
    c = w.config
    p = _prefix(layer)
    head = key_head * c.value_heads_per_key_head
    q, k, v = _head_rows(c, head)
    qkv, conv = w[p + "in_proj_qkv.weight"], w[p + "conv1d.weight"]
    if np.any(qkv[v]) or np.any(qkv[k]):
        raise CircuitError(f"layer {layer} head {head} is already in use")
    dv = c.linear_value_head_dim
    (reset,), (tick,) = dims(counter.reset), dims(counter.tick)
    (raw,) = dims(counter.outputs[0].ref)
    qkv[q.start, one] = KEY
    qkv[k.start, one] = KEY
    qkv[v.start, [reset, one]] = [VALUE / 2, VALUE / 2]  # 32 at a reset, else 0
    qkv[v.start + 1, one] = COUNTER_BIG
    for rows in (q, k, v):
        _set_taps(conv, rows, [0], c.linear_conv_kernel_dim)
    w[p + "in_proj_z.weight"][head * dv:(head + 1) * dv, one] = GATE
    # b = 96 reset + 64 tick + 32: reset -> >= 64 (beta 1), tick only -> 0 (beta 1/2),
    # neither -> -128 (beta 0)
    b = w[p + "in_proj_b.weight"]
    b[head, [reset, tick, one]] = [96.0, 64.0, 32.0]
    w[p + "norm.weight"][:] = 1.0
    w[p + "A_log"][head] = -110.0
    w[p + "dt_bias"][head] = 0.0
    w[p + "out_proj.weight"][raw, head * dv] = counter_gain(c, counter.limit)
