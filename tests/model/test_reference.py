"""ReferenceEngine against transformers' Qwen3_5ForCausalLM: logits and every state
(conv, recurrent, KV) after a chunked prefill and after each decode step."""

import numpy as np
import pytest

from qgpu.model.engine import TokenError
from qgpu.model.reference import ReferenceEngine

from .hf_util import hf_model_from_weights, random_weights, tiny_config, torch

TOL = 2e-5  # fp32 rounding level for values of order 1-10


def hf_states(cache, config):
    conv, rec, keys = {}, {}, {}
    for i, kind in enumerate(config.layer_types):
        layer = cache.layers[i]
        if kind == "linear_attention":
            conv[i] = layer.conv_states[0][0].numpy()
            rec[i] = layer.recurrent_states[0][0].numpy()
        else:
            keys[i] = layer.keys[0].transpose(0, 1).numpy()
    return conv, rec, keys


def max_state_diff(state, cache, config):
    conv, rec, keys = hf_states(cache, config)
    diffs = [np.abs(conv[i] - state.conv[i]).max() for i in conv]
    diffs += [np.abs(rec[i] - state.recurrent[i]).max() for i in rec]
    diffs += [np.abs(keys[i] - state.keys[i]).max() for i in keys]
    return max(diffs)


@pytest.mark.parametrize("tied,prompt_len", [(False, 70), (True, 5)])
def test_prefill_then_decode_matches_transformers(tied, prompt_len, capsys):
    from transformers import DynamicCache

    config = tiny_config(tie_word_embeddings=tied)
    weights = random_weights(config, seed=7)
    model = hf_model_from_weights(weights)
    engine = ReferenceEngine(weights)
    tokens = np.random.default_rng(1).integers(0, config.vocab_size, prompt_len + 6)
    state, cache = engine.new_state(), DynamicCache(config=model.config)
    with torch.no_grad():
        hf = model(torch.from_numpy(tokens[None, :prompt_len]), cache=cache, use_cache=True)
    ours = engine.prefill(state, tokens[:prompt_len])
    scale = np.abs(ours).max()  # logits of order 10-50: compare relative to it
    logit_diff = [np.abs(hf.logits[0].numpy() - ours).max()]
    state_diff = [max_state_diff(state, cache, config)]
    for token in tokens[prompt_len:]:
        with torch.no_grad():
            hf = model(torch.tensor([[int(token)]]), cache=cache, use_cache=True)
        logit_diff.append(np.abs(hf.logits[0, -1].numpy() - engine.step(state, int(token))).max())
        state_diff.append(max_state_diff(state, cache, config))
    with capsys.disabled():
        print(f"\n[reference vs transformers, tied={tied}] max|logit diff| {max(logit_diff):.2e}"
              f" (max|logit| {scale:.1f}) max|state diff| {max(state_diff):.2e}")
    assert max(logit_diff) < 2e-6 * scale and max(state_diff) < TOL
    assert state.position == prompt_len + 6


def test_recurrent_prefill_matches_stepwise_and_chunked():
    config = tiny_config()
    engine = ReferenceEngine(random_weights(config, seed=3))
    tokens = np.random.default_rng(2).integers(0, config.vocab_size, 20)
    chunked, recurrent, stepwise = engine.new_state(), engine.new_state(), engine.new_state()
    a = engine.prefill(chunked, tokens, mode="chunked")
    b = engine.prefill(recurrent, tokens, mode="recurrent")
    c = np.stack([engine.step(stepwise, int(t)) for t in tokens])
    assert np.abs(a - b).max() < TOL
    assert np.abs(b - c).max() < TOL  # batched projections round differently (BLAS)
    for i in recurrent.recurrent:
        assert np.abs(recurrent.recurrent[i] - stepwise.recurrent[i]).max() < TOL
        assert np.abs(chunked.recurrent[i] - stepwise.recurrent[i]).max() < TOL


def test_generate_matches_transformers_generate():
    config = tiny_config()
    weights = random_weights(config, seed=11)
    model = hf_model_from_weights(weights)
    prompt = [3, 14, 15, 92, 65]
    with torch.no_grad():
        hf = model.generate(torch.tensor([prompt]), max_new_tokens=12, do_sample=False)
    assert ReferenceEngine(weights).generate(prompt, 12) == hf[0, len(prompt):].tolist()


def test_bad_token_is_a_clear_error():
    engine = ReferenceEngine(random_weights(tiny_config()))
    with pytest.raises(TokenError, match="outside the vocabulary"):
        engine.step(engine.new_state(), 96)
