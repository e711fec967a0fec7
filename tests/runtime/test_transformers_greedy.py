"""runtime.transformers_engine without the machine (small, not solo): a launch's
generate() is plain greedy search whatever the checkpoint's generation_config.json says
(load_model, greedy_config, check_greedy), shown on a demo circuit merged into a small
base whose generation_config.json is hostile; and LaunchStop ends a launch where
generate_launch does (HALT is generate()'s end-of-sequence token: TRAP and its two
values, the block budget). The machine's own launches, faults and the hostile file
together: tests/runtime/test_faults_engines.py (solo)."""

import json

import pytest

from qgpu.protocol import tok

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from qgpu.runtime.transformers_engine import (  # noqa: E402
    TRAP_TAIL,
    TransformersEngineError,
    check_greedy,
    greedy_config,
    greedy_processors,
    launch_stop,
    load_model,
)

# Qwen's shipped sampling defaults, and every processor field the audit named
QWEN_SAMPLING = {"do_sample": True, "temperature": 0.6, "top_p": 0.95, "top_k": 20}


def hostile(suppress: list[int], begin: list[int]) -> dict:
    return {**QWEN_SAMPLING, "repetition_penalty": 1.5, "no_repeat_ngram_size": 2,
            "suppress_tokens": suppress, "begin_suppress_tokens": begin}


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    """(directory, prompt ids, the demo's answer ids): the adder demo merged
    into a small base whose generation_config.json suppresses the answer's tokens and
    penalises repeats (the adder's continuation repeats one token)."""
    from qgpu.merge import merge_checkpoint
    from qgpu.model.checkpoint import save_checkpoint
    from tests.merge.helpers import demo_circuit, random_base

    root = tmp_path_factory.mktemp("greedy")
    demo, part = demo_circuit("adder")
    stream = demo.stream(200, seed=11)
    answer = demo.continuation(stream[:150], 12)
    save_checkpoint(random_base("h64_tied", seed=7), root / "base")
    layout = merge_checkpoint(root / "base", part, root / "merged")
    ids = [layout.gpu_token(t) for t in stream[:150]]
    want = [layout.gpu_token(t) for t in answer]
    config = hostile(suppress=[want[1]], begin=[want[0]])
    (root / "merged" / "generation_config.json").write_text(json.dumps(config))
    return root / "merged", ids, want


def _generate(model, ids, config):
    x = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=config)
    return out.sequences[0, len(ids):].tolist()


def test_a_hostile_generation_config_does_not_reach_generate(merged):
    from transformers import AutoModelForCausalLM, GenerationConfig

    directory, ids, want = merged
    x = torch.tensor([ids])
    model = load_model(directory)
    config = greedy_config(10**6, len(want))        # no end-of-sequence in this vocabulary
    assert greedy_processors(model, config, x) == ("greedy_search", [])
    check_greedy(model, config, x)
    assert _generate(model, ids, config) == want    # the circuit's own answers

    # the same checkpoint loaded plainly: the file's fields reach generate() and change
    # the tokens, and check_greedy refuses it (so the test above can fail)
    plain = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    assert plain.generation_config.repetition_penalty == 1.5
    mode, processors = greedy_processors(plain, config, x)
    assert {"SuppressTokensLogitsProcessor",
            "SuppressTokensAtBeginLogitsProcessor"} <= set(processors)
    with pytest.raises(TransformersEngineError, match="not be plain greedy search"):
        check_greedy(plain, config, x)
    naive = GenerationConfig(do_sample=False, max_new_tokens=len(want),
                             return_dict_in_generate=True)
    assert set(greedy_processors(plain, naive, x)[1]) >= {
        "RepetitionPenaltyLogitsProcessor", "NoRepeatNGramLogitsProcessor"}
    got = _generate(plain, ids, naive)
    assert got != want and got[0] != want[0]        # begin_suppress_tokens bit
    assert _generate(plain, ids, config) != want    # suppress_tokens bit


def _stop_after(stop, offset, tokens):
    """The generated-token count after which `stop` (a LaunchStop) says stop, or None."""
    seq = [offset + 7] * 5                          # a prompt of any ids
    for n, t in enumerate(tokens, 1):
        seq.append(offset + t)
        if bool(stop(torch.tensor([seq]), None)[0]):
            return n
    return None


def test_launch_stop_ends_two_tokens_after_trap_and_after_the_budget():
    offset = 1000
    exec_ = tok("EXEC", 0, 0, 15, 0)
    trap = tok("TRAP", 1, 2, 0)
    v = tok("V", 5)
    # TRAP then its two values: stops with the second value, as generate_launch
    trace = [exec_, v, v, exec_, trap, v, v, v, v]
    stop = launch_stop(offset, max_blocks=100)
    assert _stop_after(stop, offset, trace) == 5 + TRAP_TAIL == 7
    assert stop.state["trap"] == 4 and not stop.state["over"]
    # a V token that merely looks like TRAP's argument does not start the tail; HALT is
    # not LaunchStop's to end (generate's eos)
    stop = launch_stop(offset, max_blocks=100)
    assert _stop_after(stop, offset, [exec_, v, v, tok("HALT")]) is None
    # the budget: stops when block max_blocks + 1 starts, marked over
    stop = launch_stop(offset, max_blocks=3)
    assert _stop_after(stop, offset, [exec_, v] * 5) == 7
    assert stop.state["over"] and stop.state["blocks"] == 4
    # a text id (below the offset) is neither EXEC nor TRAP
    stop = launch_stop(offset, max_blocks=0)
    assert _stop_after(stop, offset, [-1, -1000]) is None
