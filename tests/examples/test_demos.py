"""The demo circuits end to end: every answer token equals the oracle's, on the numpy
reference (recurrent and chunked paths), the fast engine, and transformers loaded from
an exported checkpoint (chunked prompt, then greedy decoding), at a small layer shape
and at Qwen3.5-2B's; plus long runs without drift."""

import numpy as np
import pytest

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.examples.demos import DEMOS
from qgpu.model.fast import FastEngine
from qgpu.model.reference import ReferenceEngine

SMALL = LayerShape.small()


def compiled_demo(name, shape=SMALL):
    demo = DEMOS[name]()
    return demo, compile_circuit(demo.circuit, shape, cache=False)


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_demo_answers_on_reference_and_fast_engine(name):
    demo, compiled = compiled_demo(name)
    tokens = demo.stream(400, seed=1)
    want = demo.answers(tokens)
    ref, fast = ReferenceEngine(compiled.weights), FastEngine(compiled.weights)
    for engine, mode in ((ref, "recurrent"), (ref, "chunked"), (fast, "recurrent")):
        got = engine.prefill(engine.new_state(), tokens, mode=mode).argmax(1).tolist()
        assert got == want, (name, type(engine).__name__, mode)
    prompt = _asking(demo, tokens[:50])
    assert fast.generate(prompt, 6) == demo.continuation(prompt, 6)


def _asking(demo, prefix):
    """prefix, OK, then a token whose answer starts a multi-token reply."""
    name, index = {"register_echo": ("GET", (1,)), "adder": ("ADD", (0, 1)),
                   "counter": ("DATA", (5,))}[demo.circuit.name]
    return prefix + [demo.vocab.id("OK"), demo.vocab.id(name, *index)]


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_demo_at_the_2b_layer_shape(name):
    demo, compiled = compiled_demo(name, LayerShape.qwen35_2b())
    assert compiled.weights.config.intermediate_size == 6144
    assert compiled.weights.config.linear_num_value_heads == 16
    tokens = demo.stream(300, seed=2)
    fast = FastEngine(compiled.weights)
    assert fast.prefill(fast.new_state(), tokens).argmax(1).tolist() == demo.answers(tokens)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DEMOS))
def test_long_run_has_no_drift(name):
    """Thousands of writes and reads: the fast engine on 20,000 tokens, the reference on
    3,000 (both GDN paths); every answer exact, the final states equal."""
    demo, compiled = compiled_demo(name)
    fast = FastEngine(compiled.weights)
    tokens = demo.stream(20_000, seed=3)
    state = fast.new_state()
    assert fast.prefill(state, tokens).argmax(1).tolist() == demo.answers(tokens)
    short = tokens[:3000]
    ref = ReferenceEngine(compiled.weights)
    s_fast, want = fast.new_state(), demo.answers(short)
    fast.prefill(s_fast, short)
    for mode in ("recurrent", "chunked"):
        s_ref = ref.new_state()
        assert ref.prefill(s_ref, short, mode=mode).argmax(1).tolist() == want
        if mode == "recurrent":
            for layer in s_fast.recurrent:
                np.testing.assert_array_equal(s_ref.recurrent[layer], s_fast.recurrent[layer])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DEMOS))
def test_demo_in_transformers_from_checkpoint(name, tmp_path):
    """Exported checkpoint, unmodified transformers: chunked prompt, then decoding; every
    RMSNorm (input, post-mixer, final) leaves its input bit-unchanged."""
    torch = pytest.importorskip("torch")
    from transformers import AutoModelForCausalLM, DynamicCache

    from qgpu.model.checkpoint import save_checkpoint

    demo, compiled = compiled_demo(name)
    save_checkpoint(compiled.weights, tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32).eval()
    changed = []

    def identity(module, args, output):
        if not torch.equal(args[0], output):
            changed.append(module)

    norms = [m for n, m in model.named_modules() if n.endswith("layernorm") or
             n == "model.norm"]
    for m in norms:
        m.register_forward_hook(identity)
    tokens = demo.stream(260, seed=4)
    prompt = tokens[:200]
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        out = model(torch.tensor([prompt]), cache=cache, use_cache=True)
        got = out.logits[0].argmax(-1).tolist()
        for t in tokens[200:]:
            out = model(torch.tensor([[t]]), cache=cache, use_cache=True)
            got.append(int(out.logits[0, -1].argmax()))
        ask = _asking(demo, prompt[:60])
        generated = model.generate(torch.tensor([ask]), max_new_tokens=5, do_sample=False)
    assert got == demo.answers(tokens)
    assert generated[0, len(ask):].tolist() == demo.continuation(ask, 5)
    assert len(norms) == 2 * compiled.plan.n_layers + 1 and not changed
