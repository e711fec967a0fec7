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

pytest.importorskip("gguf")
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
