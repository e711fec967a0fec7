"""The merged checkpoint in unmodified transformers: loads with no missing or unexpected
weights, the text logits are the base's, and a demo launch after text is token-exact
(chunked prefill of the prompt, then decoding and generate())."""

import logging

import numpy as np
import pytest

from qgpu.merge import merge_checkpoint
from qgpu.merge.layout import CONV_PAD
from qgpu.model.checkpoint import save_checkpoint

from .helpers import demo_circuit, random_base, text_kl

torch = pytest.importorskip("torch")


def _load(path, caplog):
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.enable_propagation()
    with caplog.at_level(logging.WARNING):
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    hf_logging.disable_propagation()
    complaints = [r.getMessage() for r in caplog.records
                  if any(w in r.getMessage().lower() for w in ("missing", "newly initialized",
                                                               "not used", "unexpected"))]
    assert not complaints, complaints
    return model


@pytest.mark.slow
def test_merged_checkpoint_in_transformers(tmp_path, caplog):
    from transformers import DynamicCache

    demo, part = demo_circuit("adder")
    base = random_base("h96_untied", seed=7)
    save_checkpoint(base, tmp_path / "base")
    layout = merge_checkpoint(tmp_path / "base", part, tmp_path / "out")
    original = _load(tmp_path / "base", caplog)
    merged = _load(tmp_path / "out", caplog)
    assert type(merged).__name__ == "Qwen3_5ForCausalLM"
    rng = np.random.default_rng(3)
    text = rng.integers(0, layout.gpu_token_offset, 40).tolist()
    launch = demo.stream(120, seed=11)
    pads = [layout.pad_token] * CONV_PAD  # the circuit's conv windows start from zeros
    prompt = text + pads + [layout.gpu_token(t) for t in launch[:80]]
    with torch.no_grad():
        want = original(torch.tensor([text])).logits[0].numpy()
        cache = DynamicCache(config=merged.config)
        out = merged(torch.tensor([prompt]), cache=cache, use_cache=True)
        logits = out.logits[0].numpy()
        got = logits[len(text) + CONV_PAD:].argmax(-1).tolist()
        for t in launch[80:]:
            step = merged(torch.tensor([[layout.gpu_token(t)]]), cache=cache, use_cache=True)
            got.append(int(step.logits[0, -1].argmax()))
        ask = prompt[:-1] + [layout.gpu_token(demo.vocab.id("ADD", 0, 1))]
        generated = merged.generate(torch.tensor([ask]), max_new_tokens=3, do_sample=False)
    assert text_kl(want, logits[:len(text)]).max() < 1e-9
    assert [t - layout.gpu_token_offset for t in got] == demo.answers(launch)
    gpu_ask = [t - layout.gpu_token_offset for t in ask[len(text) + CONV_PAD:]]
    assert [t - layout.gpu_token_offset for t in generated[0, len(ask):].tolist()] == \
        demo.continuation(gpu_ask, 3)


@pytest.mark.slow
def test_a_launch_aside_leaves_the_text_after_it_the_bases(tmp_path, caplog):
    """runtime.aside.CacheAside in transformers' own cache: text P, a launch (pads, GPU
    tokens), then the cache's base conv windows and attention lengths put back: the text C
    after it gets the base's logits on P + C (no launch), while the circuit's state keeps
    the launch."""
    from transformers import DynamicCache

    from qgpu.runtime.aside import CacheAside

    demo, part = demo_circuit("register_echo")
    base = random_base("h160_tied_two_full", seed=2)
    save_checkpoint(base, tmp_path / "base")
    layout = merge_checkpoint(tmp_path / "base", part, tmp_path / "out")
    original = _load(tmp_path / "base", caplog)
    merged = _load(tmp_path / "out", caplog)
    rng = np.random.default_rng(5)
    p = rng.integers(0, layout.gpu_token_offset, 20).tolist()
    c = rng.integers(0, layout.gpu_token_offset, 12).tolist()
    launch = [layout.pad_token] * CONV_PAD + [layout.gpu_token(t)
                                             for t in demo.stream(30, seed=2)]
    with torch.no_grad():
        want = original(torch.tensor([p + c])).logits[0, len(p):].numpy()
        cache = DynamicCache(config=merged.config)
        merged(torch.tensor([p]), cache=cache, use_cache=True)
        aside = CacheAside.before(cache, layout.circuit_layers)
        merged(torch.tensor([launch]), cache=cache, use_cache=True)
        circuit = {i: cache.layers[i].recurrent_states[0].clone()
                   for i in range(layout.circuit_layers - 1)}
        aside.after(cache)
        got = merged(torch.tensor([c]), cache=cache, use_cache=True).logits[0].numpy()
        plain = DynamicCache(config=merged.config)
        merged(torch.tensor([p + launch]), cache=plain, use_cache=True)
        seen = merged(torch.tensor([c]), cache=plain, use_cache=True).logits[0].numpy()
    assert text_kl(want, got).max() < 1e-9
    assert text_kl(want, seen)[:3].mean() > 1e-6  # without the aside the launch shows
    for i, rows in circuit.items():  # the launch's results stay in the circuit's state
        assert torch.equal(cache.layers[i].recurrent_states[0], rows)
