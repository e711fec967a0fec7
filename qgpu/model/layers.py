"""model.layers: Qwen3.5 layer math in plain float32 numpy, written to mirror
transformers' `modeling_qwen3_5` operation by operation (same formulas, same operation
order, float32 throughout), so that exactness arguments made on this code hold for
transformers too. Both engines call these functions; only the reference calls them on
dense weights.

Shapes: a sequence of T positions is [T, hidden]; GDN heads are [T, H, d].
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
NORM_EPS = F32(1e-6)  # l2norm's eps is fixed in transformers, independent of rms_norm_eps


def silu(x: np.ndarray) -> np.ndarray:
    # ATen's CPU kernel: x / (1 + exp(-x)); exp overflow gives -0.0 for x <= -88.72
    with np.errstate(over="ignore"):
        return x / (F32(1) + np.exp(-x))


def sigmoid(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return F32(1) / (F32(1) + np.exp(-x))


def softplus(x: np.ndarray) -> np.ndarray:
    # torch.nn.functional.softplus(beta=1, threshold=20): linear above the threshold
    with np.errstate(over="ignore"):
        return np.where(x > F32(20), x, np.log1p(np.exp(np.minimum(x, F32(20)))))


def rsqrt(x: np.ndarray) -> np.ndarray:
    return F32(1) / np.sqrt(x)


def mean_square(x: np.ndarray) -> np.ndarray:
    """mean(x^2) over the last axis, as torch computes it: the sum, divided by n."""
    return np.sum(x * x, axis=-1, keepdims=True, dtype=F32) / F32(x.shape[-1])


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """Zero-centred RMSNorm: x * rsqrt(mean(x^2) + eps) * (1 + w)."""
    return (x * rsqrt(mean_square(x) + F32(eps))) * (F32(1) + weight)


def rms_norm_gated(o: np.ndarray, z: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """GDN output norm per head (plain weight, not zero-centred), gated by silu(z).
    Only the direction of each head's output survives it."""
    normed = o * rsqrt(mean_square(o) + F32(eps))
    return (weight * normed) * silu(z)


def l2norm(x: np.ndarray) -> np.ndarray:
    return x * rsqrt(np.sum(x * x, axis=-1, keepdims=True, dtype=F32) + NORM_EPS)


def decay_log(a: np.ndarray, a_log: np.ndarray, dt_bias: np.ndarray) -> np.ndarray:
    """g = -exp(A_log) * softplus(a + dt_bias); the state is multiplied by exp(g)."""
    return -np.exp(a_log) * softplus(a + dt_bias)


def causal_conv(conv_state: np.ndarray, x: np.ndarray, weight: np.ndarray):
    """Depthwise causal conv over the last K inputs, then SiLU.

    conv_state: [C, K] the last K inputs before this call (oldest first, zeros at start);
    x: [T, C] new inputs; weight: [C, 1, K] (tap K-1 = current token).
    Returns (silu(conv) [T, C], new conv_state [C, K]).
    """
    k = weight.shape[-1]
    w = weight[:, 0, :]
    buf = np.concatenate([conv_state, x.T], axis=1)  # [C, K + T]
    t = x.shape[0]
    out = np.zeros((t, w.shape[0]), F32)
    for j in range(k):
        out += (w[:, j][:, None] * buf[:, 1 + j: 1 + j + t]).T
    return silu(out), np.ascontiguousarray(buf[:, -k:])


def repeat_key_heads(x: np.ndarray, repeats: int) -> np.ndarray:
    """[T, Hk, d] -> [T, Hv, d]: key head h serves value heads h*r .. h*r + r - 1."""
    return x if repeats == 1 else np.repeat(x, repeats, axis=1)


def gdn_recurrent(q, k, v, g, beta, state):
    """transformers' torch_recurrent_gated_delta_rule with use_qk_l2norm_in_kernel.

    q, k: [T, Hv, dk] (already repeated to value heads); v: [T, Hv, dv]; g, beta: [T, Hv];
    state: [Hv, dk, dv], updated in place. Per step: decay, delta-rule write, then read.
    Returns the read outputs [T, Hv, dv].
    """
    q = l2norm(q) / F32(q.shape[-1] ** 0.5)
    k = l2norm(k)
    out = np.empty_like(v)
    for t in range(q.shape[0]):
        state *= np.exp(g[t])[:, None, None]
        kv_mem = np.einsum("hkv,hk->hv", state, k[t])
        delta = (v[t] - kv_mem) * beta[t][:, None]
        state += k[t][:, :, None] * delta[:, None, :]
        out[t] = np.einsum("hkv,hk->hv", state, q[t])
    return out


def gdn_chunked(q, k, v, g, beta, state, chunk_size: int = 64):
    """transformers' torch_chunk_gated_delta_rule (its prefill path), same algebra and
    operation order: UT transform per chunk of 64, then a scan over chunks.
    Arguments as gdn_recurrent; state updated in place."""
    t_len, hv, dk = q.shape
    q = l2norm(q) * F32(dk ** -0.5)
    k = l2norm(k)
    pad = (chunk_size - t_len % chunk_size) % chunk_size

    def pad_seq(x):
        return np.concatenate([x, np.zeros((pad, *x.shape[1:]), F32)]) if pad else x

    # [Hv, chunks, C, d]
    def chunks(x):
        x = pad_seq(x)
        return np.ascontiguousarray(
            x.reshape(-1, chunk_size, *x.shape[1:]).transpose(2, 0, 1, *range(3, x.ndim + 1)))

    beta_c, g_c = chunks(beta), chunks(g)  # [Hv, N, C]
    qc, kc, vc = chunks(q), chunks(k), chunks(v)
    v_beta = vc * beta_c[..., None]
    k_beta = kc * beta_c[..., None]
    upper = np.triu(np.ones((chunk_size, chunk_size), bool), 1)
    cum = np.cumsum(g_c, axis=-1, dtype=F32)
    pairwise = cum[..., :, None] - cum[..., None, :]
    pairwise = np.exp(np.where(upper, F32(-np.inf), pairwise))
    ut = (k_beta @ np.swapaxes(kc, -1, -2)) * pairwise
    intra = (qc @ np.swapaxes(kc, -1, -2)) * pairwise
    decayed_k_beta = k_beta * np.exp(cum)[..., None]
    new_values = _unit_lower_solve(ut, v_beta)
    k_cumdecay = _unit_lower_solve(ut, decayed_k_beta)
    qc = qc * np.exp(cum)[..., None]
    kc = kc * np.exp(cum[..., -1:] - cum)[..., None]
    chunk_decay = np.exp(cum[..., -1])[..., None, None]  # [Hv, N, 1, 1]
    out = np.zeros_like(new_values)
    for i in range(new_values.shape[1]):
        v_new = new_values[:, i] - k_cumdecay[:, i] @ state
        out[:, i] = qc[:, i] @ state + intra[:, i] @ v_new
        state[...] = state * chunk_decay[:, i] + np.swapaxes(kc[:, i], -1, -2) @ v_new
    out = out.reshape(hv, -1, out.shape[-1])[:, :t_len]
    return np.ascontiguousarray(out.transpose(1, 0, 2))


def _unit_lower_solve(system: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """Solve (I + strictly_lower(system)) X = rhs by forward substitution (what
    torch.linalg.solve_triangular(upper=False, unitriangular=True) computes)."""
    x = np.array(rhs, dtype=F32, copy=True)
    for i in range(1, system.shape[-1]):
        x[..., i, :] -= np.einsum("...j,...jd->...d", system[..., i, :i], x[..., :i, :])
    return x


def rope_tables(positions: np.ndarray, rotary_dim: int, theta: float):
    """cos, sin [T, rotary_dim] as Qwen3_5TextRotaryEmbedding computes them for text
    (all three mrope position rows equal, so interleaving changes nothing)."""
    exponents = np.arange(0, rotary_dim, 2, dtype=F32) / F32(rotary_dim)
    inv_freq = F32(1) / (F32(theta) ** exponents)
    freqs = positions.astype(F32)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x: [T, H, hd]; rotates the first rotary_dim dims (rotate_half convention)."""
    r = cos.shape[-1]
    rot, rest = x[..., :r], x[..., r:]
    half = r // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], axis=-1)
    out = rot * cos[:, None, :] + rotated * sin[:, None, :]
    return np.concatenate([out, rest], axis=-1)


def attention(q, k_all, v_all, query_positions, scale):
    """Causal softmax attention. q: [T, H, hd]; k_all, v_all: [S, Hkv, hd] (cache + new);
    query_positions: [T] absolute positions (key j is visible to a query at p iff j <= p)."""
    groups = q.shape[1] // k_all.shape[1]
    k_rep = np.repeat(k_all, groups, axis=1)
    v_rep = np.repeat(v_all, groups, axis=1)
    scores = np.einsum("thd,shd->hts", q, k_rep) * F32(scale)
    visible = np.arange(k_all.shape[0])[None, :] <= query_positions[:, None]
    scores = np.where(visible[None], scores, F32(-np.inf))
    scores = np.exp(scores - scores.max(-1, keepdims=True))
    probs = scores / scores.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", probs, v_rep)

