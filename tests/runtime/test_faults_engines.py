"""The model's own fault reports on the independent engines: a fault-detecting machine
(MachineSpec.detect_faults, compiled for this file's launches) merged into a small
release-shaped base whose generation_config.json is hostile (Qwen's sampling defaults,
repetition_penalty, no_repeat_ngram_size, suppress_tokens = HALT, begin_suppress_tokens
= the launches' first tokens). In transformers (`--engine transformers`: from_pretrained,
generate()) and in llama.cpp (`qgpu export-gguf`, `--engine llama.cpp`): an out-of-bounds
read and a divergent barrier end with the model's TRAP record, token for token the
interpreter's trace, and raise the interpreter's Fault word for word (runtime.generate's
generate_launch and runtime.model_engines do the same on qgpu's engine:
tests/runtime/test_faults_model.py); a clean launch still runs to HALT, exact, despite the
hostile file.

`solo`: the merged machine is held dense in float32 by transformers (hidden ~1,960, 30
layers: merge.size predicts 7.4 GiB; measured peak RSS 10.0 GiB) and mapped whole by
llama.cpp (peak RSS 8.8 GiB); 27 min on 2 shared cores."""

import gc
import json

import pytest

from qgpu.circuit.machine.spec import MachineSpec
from qgpu.interp import run_launch
from qgpu.isa.asm import assemble
from qgpu.isa.faults import Fault
from qgpu.model.config import LINEAR
from qgpu.protocol import expected_trace, kind_of, tok
from qgpu.runtime.transformers_check import PeakRss
from tests.memory import release_memory
from tests.runtime.test_transformers_greedy import QWEN_SAMPLING

pytestmark = [pytest.mark.slow, pytest.mark.solo]
GIB = 2**30
LAUNCHES = {  # name: (source, grid, block, memory)
    "oob-read": ("block 0:\n  ld.global r1, [512]\n  exit\n", 1, 1, []),
    "divergent-barrier": ("block 0:\n  tid r1\n  setlt.u r2, r1, 2\n  br r2, 1, 2\n"
                          "block 1:\n  bar 3\nblock 2:\n  bar 4\nblock 3:\n  exit\n"
                          "block 4:\n  exit\n", 1, 8, []),
    "clean": ("block 0:\n  tid r1\n  add r2, r1, r1\n  add r3, r2, r2\n  ld.global r4, [r3]\n"
              "  jmp 1\nblock 1:\n  add r5, r4, r1\n  st.global [r3+16], r5\n  exit\n", 1, 4,
              [10, 20, 30, 40]),
}
FAULTING = ("oob-read", "divergent-barrier")


def _launch(name):
    source, grid, block, memory = LAUNCHES[name]
    return assemble(source), grid, block, memory


def _interpreter(name):
    """(the interpreter's trace, its Fault or None, its final memory)."""
    prog, grid, block, memory = _launch(name)
    try:
        result = run_launch(prog, grid, block, memory=memory or None)
    except Fault as fault:
        return expected_trace(fault.events), fault, None
    return expected_trace(result.events), None, list(result.memory)


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    import numpy as np

    from qgpu.merge import merge_checkpoint
    from qgpu.merge.circuits import machine_part
    from qgpu.model.weights import EMBED, QwenWeights
    from tests.merge.helpers import write_release_layout
    from tests.merge.machine_helpers import SHAPE, machine_base_config

    release_memory(keep_default_machine=False)
    root = tmp_path_factory.mktemp("faults")
    spec = MachineSpec.for_programs([_launch(n)[0] for n in LAUNCHES], slots=1,
                                    detect_faults=True)
    part = machine_part(SHAPE, spec=spec)
    config = machine_base_config(64, [LINEAR, LINEAR], True)
    base = QwenWeights.random(config, seed=5, scale=0.05)
    base[EMBED] = np.random.default_rng(6).normal(0, 1.0, base[EMBED].shape)
    (root / "base").mkdir()
    write_release_layout(root / "base", base, bf16=True)
    offset = config.vocab_size     # the GPU tokens follow the base's vocabulary
    firsts = sorted({offset + _interpreter(n)[0][0] for n in LAUNCHES})
    hostile = {**QWEN_SAMPLING, "repetition_penalty": 1.3, "no_repeat_ngram_size": 3,
               "suppress_tokens": [offset + tok("HALT")], "begin_suppress_tokens": firsts}
    (root / "base" / "generation_config.json").write_text(json.dumps(hostile))
    layout = merge_checkpoint(root / "base", part, root / "merged")
    assert layout.gpu_token_offset == offset
    del part
    release_memory(keep_default_machine=False)
    copied = json.loads((root / "merged" / "generation_config.json").read_text())
    assert copied["suppress_tokens"] == hostile["suppress_tokens"]  # merge copies the file
    return root


def test_transformers_ends_with_the_models_trap(merged):
    pytest.importorskip("transformers")
    from qgpu.runtime.transformers_engine import TransformersMachine, run_transformers

    with PeakRss() as peak:
        machine = TransformersMachine(merged / "merged", "cpu")
        for name in LAUNCHES:
            prog, grid, block, memory = _launch(name)
            want, fault, final = _interpreter(name)
            run = machine.launch(prog, grid, block, memory)
            assert run.trace == want, name
            if fault is None:
                assert run.trace[-1] == tok("HALT") and run.memory[:8] == final[:8]
                run_transformers(machine, prog, grid, block, memory, check=True)
                continue
            assert kind_of(run.trace[-3])[0] == "TRAP" and tok("HALT") not in run.trace
            with pytest.raises(Fault) as got:   # --check: the replay agrees, then the fault
                run_transformers(machine, prog, grid, block, memory, check=True)
            assert str(got.value) == str(fault) and got.value.trap == fault.trap
    print(f"transformers: peak RSS {peak.bytes / GIB:.2f} GiB, growth {peak.growth / GIB:.2f}")
    del machine
    gc.collect()


@pytest.fixture(scope="module")
def merged_gguf(merged):
    """The merge as `qgpu export-gguf` writes it (mixed types: model.gguf_types)."""
    pytest.importorskip("gguf")
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed")
    from qgpu.runtime.gguf_export import export_gguf

    path = merged / "merged.gguf"
    report = export_gguf(merged / "merged", path)
    assert {"BF16", "F32"} <= set(report["types"])   # the base bf16, the circuit mixed
    yield path
    path.unlink()


def test_llama_cpp_ends_with_the_models_trap(merged_gguf):
    from qgpu.runtime.generate import generate_launch
    from qgpu.runtime.llama_cpp import load_gguf_machine
    from qgpu.runtime.model_engines import run_model

    with PeakRss() as peak:
        machine = load_gguf_machine(merged_gguf, n_ctx=2048)
        for name in LAUNCHES:
            prog, grid, block, memory = _launch(name)
            want, fault, final = _interpreter(name)
            run = generate_launch(machine, prog, grid, block, memory)
            assert run.trace == want, name
            if fault is None:
                assert run.memory[:8] == final[:8]
                continue
            with pytest.raises(Fault) as got:
                run_model(prog, grid, block, memory, check=True, machine=machine)
            assert str(got.value) == str(fault) and got.value.trap == fault.trap
    print(f"llama.cpp: peak RSS {peak.bytes / GIB:.2f} GiB, growth {peak.growth / GIB:.2f}")
    del machine
    gc.collect()
