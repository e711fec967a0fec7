"""Text quality of merged models (docs/merge.md): random small bases merged with a demo
circuit, measured on the numpy reference engine (recurrent path) in float32.

(a) next-token KL(original || merged) over text positions of random text, for the exact
    norm compensation and for the weaker ones (ratio: 1 + w scaled by sqrt(Hb/H) only;
    none: norm weights left alone), next to the float32 floor: the KL between the base's
    own recurrent and chunked paths (same model, other summation order);
(b) a launch inside text: KL(base(P + C) || merged(P + pads + G + C)) over the
    continuation C (3 pads open the launch: the circuit's conv windows), split into its
    first 3 tokens (the base's conv windows still hold GPU positions) and the rest; with 3
    closing pads too (the base's conv windows then hold exact zeros); without
    neutralising GPU tokens in the base's layers; a control that only shifts C's
    positions by the launch's length (the RoPE part, no launch); bases without
    full-attention layers (no dilution of attention by GPU positions); and the launch
    put aside (runtime.aside: base conv windows, attention lengths and position restored
    after it).

    .venv/bin/python benchmarks/bench_merge.py [--quick]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qgpu.circuit.compile import compile_circuit
from qgpu.examples.demos import DEMOS
from qgpu.merge import circuit_part, merge_weights
from qgpu.merge.layout import CONV_PAD, layer_shape_of
from qgpu.model.config import FULL, LINEAR, QwenConfig
from qgpu.model.reference import ReferenceEngine
from qgpu.model.weights import EMBED, QwenWeights
from qgpu.runtime.aside import Aside

BASES = [  # name, hidden, layer types, tied, slow decay
    ("h64", 64, [LINEAR, LINEAR, LINEAR, FULL], True, False),
    ("h128-untied", 128, [LINEAR, FULL, LINEAR, LINEAR, LINEAR, FULL], False, False),
    ("h256", 256, [LINEAR, LINEAR, LINEAR, FULL] * 2, True, False),
    ("h128-linear-only", 128, [LINEAR] * 4, True, False),
    ("h128-linear-only-slow-decay", 128, [LINEAR] * 4, True, True),
    ("h128-slow-decay", 128, [LINEAR, LINEAR, LINEAR, FULL], True, True),
]


def make_base(hidden, types, tied, slow, seed, embed_std):
    """Random weights; `slow`: GDN decays exp(-0.001..0.03) per token (long memory, as
    trained models have in some heads) instead of QwenWeights.random's mostly fast ones."""
    config = QwenConfig(hidden_size=hidden, num_hidden_layers=len(types), layer_types=types,
                        vocab_size=1000, intermediate_size=512, linear_num_key_heads=4,
                        linear_num_value_heads=4, linear_key_head_dim=32,
                        linear_value_head_dim=32, num_attention_heads=2,
                        num_key_value_heads=1, head_dim=16, tie_word_embeddings=tied)
    w = QwenWeights.random(config, seed=seed, scale=0.15)
    rng = np.random.default_rng(seed)
    w[EMBED] = rng.normal(0, embed_std, w[EMBED].shape)
    if slow:
        for i, kind in enumerate(types):
            if kind == LINEAR:
                name = f"model.layers.{i}.linear_attn.A_log"
                w[name] = np.log(rng.uniform(0.001, 0.02, w[name].shape))
    return w


def log_softmax(x):
    x = x.astype(np.float64)
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def kl(original, merged):
    p, q = log_softmax(original), log_softmax(merged)
    return (np.exp(p) * (p - q[:, :p.shape[1]])).sum(-1)


def run(weights, tokens, mode="recurrent", position_gap=0, split=None):
    engine = ReferenceEngine(weights)
    state = engine.new_state()
    if split is None:
        return engine.prefill(state, tokens, mode)
    first = engine.prefill(state, tokens[:split], mode)
    state.position += position_gap
    return np.concatenate([first, engine.prefill(state, tokens[split:], mode)])


def text_kl_table(part, seqs, length, embed_stds):
    print("\n(a) text KL(original || merged), mean / max over positions")
    print("| base | embed std | float32 floor | exact | ratio | none |")
    print("|---|---|---|---|---|---|")
    for name, hidden, types, tied, slow in BASES:
        for std in embed_stds:
            base = make_base(hidden, types, tied, slow, 1, std)
            merged = {m: merge_weights(base, part, norm_mode=m)[0]
                      for m in ("exact", "ratio", "none")}
            rng = np.random.default_rng(2)
            stats = {k: [] for k in ("floor", "exact", "ratio", "none")}
            for _ in range(seqs):
                text = rng.integers(0, base.config.vocab_size, length).tolist()
                original = run(base, text)
                stats["floor"].append(kl(original, run(base, text, "chunked")))
                for m, w in merged.items():
                    stats[m].append(kl(original, run(w, text)))
            cells = [f"{np.concatenate(v).mean():.1e} / {np.concatenate(v).max():.1e}"
                     for v in stats.values()]
            print(f"| {name} | {std} | " + " | ".join(cells) + " |")


def launch_table(part, demo, gpu, seqs, prefix, cont, launch_len):
    print(f"\n(b) KL(base(P + C) || merged(P + pads + G + C)) over C; |P| = {prefix}, "
          f"|G| = {launch_len}, |C| = {cont}; mean over C[0:3] / C[3:]")
    print("| base | 3 pads + G | 3 pads + G + 3 pads | not neutralised | "
          "RoPE shift only (no launch) | launch aside (runtime.aside) |")
    print("|---|---|---|---|---|---|")
    for name, hidden, types, tied, slow in BASES:
        base = make_base(hidden, types, tied, slow, 1, 0.02)
        merged = {n: merge_weights(base, part, neutralise=n) for n in (True, False)}
        rng = np.random.default_rng(3)
        pad = [merged[True][1].pad_token] * CONV_PAD
        cells = {k: [] for k in ("on", "closed", "off", "shift", "aside")}
        for s in range(seqs):
            p = rng.integers(0, base.config.vocab_size, prefix).tolist()
            c = rng.integers(0, base.config.vocab_size, cont).tolist()
            g = pad + [gpu(t) for t in demo.stream(launch_len, seed=s)][:launch_len]
            original = run(base, p + c)[prefix:]
            for key, flag, gg in (("on", True, g), ("closed", True, g + pad),
                                  ("off", False, g)):
                logits = run(merged[flag][0], p + gg + c)[prefix + len(gg):]
                cells[key].append(kl(original, logits))
            cells["shift"].append(kl(original, run(base, p + c, position_gap=len(g),
                                                   split=prefix)[prefix:]))
            weights, lay = merged[True]
            engine = ReferenceEngine(weights)
            state = engine.new_state()
            engine.prefill(state, p)
            aside = Aside.before(state, lay.circuit_layers)
            engine.prefill(state, g)
            aside.after(state)
            cells["aside"].append(kl(original, engine.prefill(state, c)))
        out = []
        for v in cells.values():
            v = np.stack(v)
            out.append(f"{v[:, :3].mean():.1e} / {v[:, 3:].mean():.1e}")
        print(f"| {name} | " + " | ".join(out) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer and shorter sequences")
    args = parser.parse_args()
    start = time.perf_counter()
    demo = DEMOS["register_echo"]()
    shape = layer_shape_of(make_base(64, [LINEAR, FULL], True, False, 0, 1.0).config)
    compiled = compile_circuit(demo.circuit, shape, cache=False)
    part = circuit_part(compiled)
    seqs = 2 if args.quick else 6
    text_kl_table(part, seqs, 64, (0.02, 1.0))
    lay = merge_weights(make_base(64, [LINEAR, FULL], True, False, 0, 1.0), part)[1]
    launch_table(part, demo, lay.gpu_token, seqs, 32, 32, 24)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
