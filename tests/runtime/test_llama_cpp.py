"""runtime.llama_cpp: compiled circuits run in llama.cpp (llama-cpp-python, built from
source) from their GGUF files: every answer token of the demo circuits equals the
oracle's, teacher forced in batches and generated one token at a time, and the recurrent
state read back from llama.cpp equals qgpu's fast engine's bit for bit. Skipped where
llama-cpp-python is not installed (it builds llama.cpp from source: see
docs/validation/engines.md for the build and its time)."""

import numpy as np
import pytest

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.errors import LaunchError
from qgpu.examples.demos import DEMOS
from qgpu.model.fast import FastEngine
from qgpu.model.gguf import weights_to_gguf

gguf = pytest.importorskip("gguf")
pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install "
                    "llama-cpp-python: it compiles llama.cpp from source)")

from qgpu.runtime.llama_cpp import LlamaCppEngine  # noqa: E402


def _engine(tmp_path, name, shape):
    demo = DEMOS[name]()
    compiled = compile_circuit(demo.circuit, shape, cache=False)
    info = {"circuit": name, "gpu_token_offset": 0,
            "gpu_tokens": compiled.weights.config.vocab_size}
    path = tmp_path / f"{name}.gguf"
    weights_to_gguf(compiled.weights, info, path,
                    names=[demo.vocab.name(i) for i in range(demo.vocab.size)])
    return demo, compiled, LlamaCppEngine(path, n_ctx=2048, n_batch=256)


@pytest.mark.parametrize("name", sorted(DEMOS))
def test_demo_circuit_token_exact_and_state_bit_exact_in_llama_cpp(tmp_path, name):
    demo, compiled, engine = _engine(tmp_path, name, LayerShape.small())
    stream = demo.stream(1200, seed=3)
    want = demo.answers(stream)
    fast = FastEngine(compiled.weights)
    # teacher forced, in batches of 256 tokens (ggml's batched matrix products)
    state = engine.new_state()
    assert engine.forced_greedy(state, stream) == want
    ref = fast.new_state()
    fast.consume(ref, stream)
    for layer, s in state.recurrent.items():
        assert np.array_equal(s, ref.recurrent[layer]), layer
    # generated: each of the model's answers fed back, one decode call per token
    prompt = stream[:200]
    state = engine.new_state()
    engine.consume(state, prompt[:-1])
    out, token = [], prompt[-1]
    for _ in range(40):
        token = engine.step_greedy(state, token)
        out.append(token)
    assert out == demo.continuation(prompt, 40)


def test_a_stale_state_is_refused(tmp_path):
    _, _, engine = _engine(tmp_path, "register_echo", LayerShape.small())
    old = engine.new_state()
    engine.new_state()
    with pytest.raises(LaunchError, match="stale"):
        engine.step_greedy(old, 0)


def test_run_with_engine_llama_cpp_needs_a_gguf_file(tmp_path, capsys):
    from qgpu.cli import main

    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(int *o) { o[threadIdx.x] = 1; }\n")
    assert main(["run", str(src), "--grid", "1", "--block", "1", "--arg", "o=0",
                 "--engine", "llama.cpp"]) == 1
    assert "--engine llama.cpp needs --model FILE.gguf" in capsys.readouterr().err
    assert main(["run", str(src), "--grid", "1", "--block", "1", "--arg", "o=0",
                 "--model", str(tmp_path / "missing.gguf")]) == 1
    assert "no such GGUF file" in capsys.readouterr().err


def test_parse_recurrent_refuses_a_state_of_another_shape(tmp_path):
    from qgpu.model.gguf import GgufError
    from qgpu.runtime.llama_cpp import parse_recurrent

    demo, compiled, engine = _engine(tmp_path, "adder", LayerShape.small())
    state = engine.new_state()
    engine.consume(state, demo.stream(20))
    blob = engine.state_bytes()
    heads, dim = engine.ssm_shape()
    assert sorted(parse_recurrent(blob, engine.layer_types, (heads, dim))) == [0, 1]
    with pytest.raises(GgufError, match="expected float32"):
        parse_recurrent(blob, engine.layer_types, (heads, dim * 2))


@pytest.mark.parametrize("base_name", ["h64_tied", "h96_untied", "h160_tied_two_full"])
@pytest.mark.parametrize("demo_name", sorted(DEMOS))
def test_demo_merged_into_a_random_base_is_exact_in_llama_cpp(tmp_path, base_name, demo_name):
    """A demo circuit merged in front of a random Qwen3.5 base (tied or untied head, full
    attention layers, the merge's norm compensation), with the base's tokenizer in the
    GGUF: every answer at the GPU positions is the oracle's, and the circuit layers'
    states read back from llama.cpp equal the circuit's own run bit for bit."""
    from qgpu.merge import merge_weights
    from tests.merge.helpers import demo_circuit, random_base
    from tests.merge.machine_helpers import write_tokenizer

    demo, part = demo_circuit(demo_name)
    merged, lay = merge_weights(random_base(base_name, seed=3), part)
    info = {"circuit": demo_name, **lay.describe()}   # with the merge's pad token
    write_tokenizer(tmp_path, size=lay.gpu_token_offset)
    path = tmp_path / "merged.gguf"
    weights_to_gguf(merged, info, path, tokenizer=tmp_path / "tokenizer.json",
                    names=[demo.vocab.name(i) for i in range(demo.vocab.size)])
    engine = LlamaCppEngine(path, n_ctx=1024, n_batch=256)
    tokens = demo.stream(150, seed=5)
    state = engine.new_state()
    got = engine.forced_greedy(state, [lay.gpu_token(t) for t in tokens])
    assert [t - lay.gpu_token_offset for t in got] == demo.answers(tokens)
    alone = FastEngine(part.weights)
    want = alone.new_state()
    alone.prefill(want, tokens)
    for layer, rows in want.recurrent.items():
        assert np.array_equal(state.recurrent[layer], rows), layer


def test_a_gguf_without_the_machine_is_refused_as_a_machine(tmp_path):
    from qgpu.runtime.checkpoint import CheckpointMachineError
    from qgpu.runtime.llama_cpp import load_gguf_machine

    _engine(tmp_path, "counter", LayerShape.small())
    with pytest.raises(CheckpointMachineError, match="no machine circuit"):
        load_gguf_machine(tmp_path / "counter.gguf")


def test_binary_keys_are_exact_in_llama_cpp(tmp_path):
    """Tables keyed by binary row numbers (ir.BinaryKey: the machine's memory addresses)
    store and read exactly in llama.cpp: its l2 norm of a key is not transformers' (a key
    of magnitude 128 came back as (1 - 2^-24) e_r and every stored word one ulp short)."""
    from tests.circuit.test_binary_key import binary_echo, oracle, stream

    circuit, vocab = binary_echo()
    compiled = compile_circuit(circuit, LayerShape.small(), cache=False)
    path = tmp_path / "binary_echo.gguf"
    weights_to_gguf(compiled.weights, {"circuit": "binary_echo", "gpu_token_offset": 0,
                                       "gpu_tokens": compiled.weights.config.vocab_size},
                    path, names=[vocab.name(i) for i in range(vocab.size)])
    engine = LlamaCppEngine(path, n_ctx=2048, n_batch=256)
    tokens = stream(vocab, 600, seed=5)
    state = engine.new_state()
    assert engine.forced_greedy(state, tokens) == oracle(vocab, tokens)
    fast = FastEngine(compiled.weights)
    ref = fast.new_state()
    fast.consume(ref, tokens)
    for layer, s in state.recurrent.items():
        assert np.array_equal(s, ref.recurrent[layer]), layer


def _as_bf16(weights):
    """The base rounded to bfloat16, as releases ship it (2-D tensors; norms stay)."""
    for name in list(weights.tensors):
        dense = weights.dense(name).astype(np.float32)
        if dense.ndim == 2:
            weights[name] = (dense.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
    return weights


def test_text_on_a_mixed_type_merge_is_the_base_ggufs_in_llama_cpp(tmp_path):
    """Greedy text in llama.cpp: a demo circuit merged in front of a bfloat16 base with full
    attention layers, exported in mixed types (model.gguf_types: the base's layers BF16,
    the circuit's projections 16-bit where exact), writes the same text tokens as the base
    exported alone, and its GPU positions stay exact."""
    from qgpu.merge import merge_weights
    from tests.merge.helpers import demo_circuit, random_base

    demo, part = demo_circuit("register_echo")
    base = _as_bf16(random_base("h160_tied_two_full", seed=4))
    merged, lay = merge_weights(base, part)
    offset = lay.gpu_token_offset
    weights_to_gguf(base, {"gpu_token_offset": offset, "gpu_tokens": 0, "circuit_layers": 0},
                    tmp_path / "base.gguf")
    info = {"circuit": "register_echo", **lay.describe()}
    names = [demo.vocab.name(i) for i in range(demo.vocab.size)]
    weights_to_gguf(merged, info, tmp_path / "merged.gguf", names=names)
    kinds = {t.tensor_type.name for t in gguf.GGUFReader(tmp_path / "merged.gguf").tensors}
    assert {"BF16", "F32"} <= kinds
    prompt = [(37 * i + 5) % offset for i in range(10)]
    written = []
    for path in (tmp_path / "base.gguf", tmp_path / "merged.gguf"):
        engine = LlamaCppEngine(path, n_ctx=256, n_batch=64)
        state = engine.new_state()
        engine.consume(state, prompt[:-1])
        token, ids = prompt[-1], []
        for _ in range(20):
            token = engine.step_greedy(state, token)
            ids.append(token)
        written.append(ids)
    assert written[1] == written[0]
    engine = LlamaCppEngine(tmp_path / "merged.gguf", n_ctx=1024, n_batch=256)
    tokens = demo.stream(120, seed=6)
    got = engine.forced_greedy(engine.new_state(), [lay.gpu_token(t) for t in tokens])
    assert [t - offset for t in got] == demo.answers(tokens)
