"""Issue 36, a chat session that never dies: a /run with a bad value or an unbalanced
quote, a typed GPU token name, a line that is not UTF-8, Ctrl-C during a /run, a 100 KB
line: each is one `error:` line and the next line is read. /run takes `qgpu run`'s launch
options (dim3, --shared-bytes, --symbol, --budget) and shows the kernel's printf output.
Text replies never hold a GPU token or a `<|qgpu:reserved_N|>` filler.

The slow tests run on the machine merged into a small random base (in memory: one merged
machine, ~5 GB, built once for the module)."""

import io
import json
import os
import signal
import sys
import threading

import pytest

from qgpu.chat import ChatSession
from qgpu.chat.text import MAX_LINE_TOKENS, TextModel
from qgpu.cli.chat_run import run_line
from qgpu.model.fast import FastEngine
from qgpu.protocol import vocab
from tests.merge.helpers import random_base
from tests.merge.machine_helpers import ScriptedLanguage, merged_machine, write_tokenizer

pytestmark = pytest.mark.xdist_group("merged_machine")

PRINTS = ('#include <cstdio>\n__global__ void k(int *out) {\n'
          '  if (threadIdx.x == 0) { out[0] = 7 + out[1]; printf("sum %d\\n", out[0]); }\n}\n')
SCALE = "__global__ void k(float *o, float s) { o[threadIdx.x] = s * threadIdx.x; }\n"
SHARED = ("extern __shared__ int buf[];\n__constant__ int tab[4];\n"
          "__global__ void k(int *o) { buf[threadIdx.x] = tab[threadIdx.x] + blockIdx.y;\n"
          "  __syncthreads(); o[blockIdx.y * 4 + threadIdx.x] = buf[3 - threadIdx.x]; }\n")
LONG = ("__global__ void k(volatile int *o, int n) {\n"
        "  for (int i = 0; i < n; i++) o[0] = o[0] + i;\n}\n")


def _merged_tokenizer(directory, text_size: int, base_vocab: int) -> None:
    """A word-level tokenizer of text_size ids merged as `qgpu merge` merges it: fillers
    up to base_vocab, then the machine's GPU token names."""
    from qgpu.merge.tokenizer import merged_tokenizer

    write_tokenizer(directory, text_size)
    body = json.loads((directory / "tokenizer.json").read_text())
    names = [vocab.name(t) for t in range(vocab.VOCAB_SIZE)]
    (directory / "tokenizer.json").write_text(json.dumps(
        merged_tokenizer(body, base_vocab, names)))


def test_text_replies_never_hold_a_reserved_or_gpu_token(tmp_path):
    """The base's greedy text with the ids past the tokenizer's own size masked: the ids an
    unmasked run picks first are made fillers here, and the masked run never writes one
    (before the fix a reply to control characters held `<|qgpu:reserved_N|>`)."""
    weights = random_base("h96_untied", seed=7)
    engine = FastEngine(weights, "numpy")
    vocab_size = weights.config.vocab_size
    free = TextModel(engine, None, vocab_size, (), 12)
    prompt = [1, 2, 3, 4, 5]
    unmasked = free.generate_ids(prompt)
    limit = max(unmasked)           # that id, and every one above it, a filler now
    assert 8 < limit < vocab_size
    _merged_tokenizer(tmp_path, limit, vocab_size)
    model = TextModel.from_directory(tmp_path, engine, vocab_size, 12)
    assert model.text_limit == limit
    masked = model.generate_ids(prompt)
    assert masked and all(t < limit for t in masked)
    reply = model.generate("\x01\x02\x03 \x1b[2J \x7f")
    assert "<|qgpu:reserved" not in reply and "<|gpu:" not in reply


def test_a_typed_gpu_token_and_a_huge_line_are_refused_by_name(tmp_path):
    weights = random_base("h64_tied")
    _merged_tokenizer(tmp_path, 140, weights.config.vocab_size)
    model = TextModel.from_directory(tmp_path, FastEngine(weights, "numpy"),
                                     weights.config.vocab_size, 8)
    chat = ChatSession(None, model)
    for line, said in (("w3 <|gpu:HALT|> w4", "<|gpu:HALT|>, the name of a GPU"),
                       ("<|qgpu:reserved_145|>", "<|qgpu:reserved_145|>"),
                       (" ".join(["w5"] * (MAX_LINE_TOKENS + 1)), "tokens; a chat line takes"),
                       ("w1 " * 40_000, "characters; a chat line takes")):
        reply = chat.handle(line)
        assert reply.kind == "error" and said in reply.text, reply.text
        assert len(reply.text.splitlines()) == 1
    assert chat.turns == []           # refused lines are not part of the conversation
    assert chat.handle("w3 w4").kind == "text" and len(chat.turns) == 2


@pytest.fixture(scope="module")
def machine():
    return merged_machine("m64_tied_linear")[0]


def _chat(machine):
    return ChatSession(machine, ScriptedLanguage(["fine, thanks"] * 4), run_line=run_line)


@pytest.mark.slow
def test_run_takes_qgpu_runs_options_and_shows_printf(machine, tmp_path):
    chat = _chat(machine)
    (tmp_path / "p.cu").write_text(PRINTS)
    reply = chat.handle(f"/run {tmp_path}/p.cu --grid 1 --block 4 --arg out=0,35")
    assert reply.kind == "launch", reply.text
    assert "printf:\n  sum 42" in reply.text and "out: [0, 35] -> [42, 35]" in reply.text
    (tmp_path / "s.cu").write_text(SHARED)
    reply = chat.handle(f"/run {tmp_path}/s.cu --grid 1,2 --block 4 --shared-bytes 16 "
                        "--symbol tab=10,20,30,40 --arg o=zeros:8")
    assert reply.kind == "launch", reply.text
    assert reply.runs[0].after == {"o": [40, 30, 20, 10, 41, 31, 21, 11]}
    (tmp_path / "f.cu").write_text(LONG)
    reply = chat.handle(f"/run {tmp_path}/f.cu --grid 1 --block 4 --arg o=zeros:1 "
                        "--arg n=1000000 --budget 3")
    assert reply.kind == "error" and "budget" in reply.text


@pytest.mark.slow
@pytest.mark.parametrize("words, said", [
    # legal values whose launch qgpu's API may not take yet: a launch, or one error line
    ("--arg o=zeros:4 --arg s=nan", None),
    ("--arg o=zeros:4 --arg s=1e400", None),
    ("--arg o=zeros:100000000000000 --arg s=1", None),
    ("--arg o=zeros:4 --arg 's=1", "cannot split the line"),
    ("--arg o=zeros:4", "missing --arg for s"),
    ("--grid 1,1,1,1", "grid"),
])
def test_a_bad_run_is_one_error_and_the_chat_goes_on(machine, tmp_path, words, said):
    chat = _chat(machine)
    (tmp_path / "scale.cu").write_text(SCALE)
    reply = chat.handle(f"/run {tmp_path}/scale.cu --grid 1 --block 4 {words}")
    if said is not None or reply.kind != "launch":
        assert reply.kind == "error" and len(reply.text.splitlines()) == 1, reply.text
        assert said is None or said in reply.text, reply.text
    good = chat.handle(f"/run {tmp_path}/scale.cu --grid 1 --block 4 --arg o=zeros:4 "
                       "--arg s=0.5")
    assert good.kind == "launch" and good.runs[0].after["o"] == [0.0, 0.5, 1.0, 1.5]


def _cli(monkeypatch, capsys, machine, stdin: bytes, during=None) -> tuple[int, str, str]:
    """`qgpu chat` over the in-memory merged machine with `stdin`'s bytes as its input."""
    import qgpu.cli.chat as cli_chat
    from qgpu.cli import main

    monkeypatch.setattr(cli_chat, "open_session", lambda *a, **k: _chat(machine))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(["chat", "--model", "unused"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow
def test_a_line_that_is_not_utf8_is_one_error(machine, monkeypatch, capsys):
    code, out, err = _cli(monkeypatch, capsys, machine, b"caf\xe9 \xff\nhello\n/quit\n")
    assert code == 0 and "Traceback" not in err
    lines = out.splitlines()
    assert lines[0].startswith("error: the line is not UTF-8 text (byte 0xe9 at offset 3)")
    assert lines[1] == "fine, thanks"


@pytest.mark.slow
def test_ctrl_c_during_a_run_stops_that_run_only(machine, monkeypatch, capsys, tmp_path):
    (tmp_path / "f.cu").write_text(LONG)
    stdin = (f"/run {tmp_path}/f.cu --grid 1 --block 4 --arg o=zeros:1 --arg n=1000000 "
             "--budget 100000\n"
             "hello\n").encode()
    # Python's own SIGINT handler, as in a `qgpu chat` process; Ctrl-C 1 s after the
    # model starts generating (not a fixed time after the line: under CI's load the
    # compile alone may take longer)
    import qgpu.runtime.model_engines as model_engines

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    generate = model_engines.generate_launch

    def generate_then_interrupt(*args, **kwargs):
        timer.start()
        return generate(*args, **kwargs)

    monkeypatch.setattr(model_engines, "generate_launch", generate_then_interrupt)
    try:
        code, out, err = _cli(monkeypatch, capsys, machine, stdin)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert code == 0 and "Traceback" not in err
    assert out.splitlines() == ["error: interrupted; the chat goes on (/quit ends it)",
                                "fine, thanks"]

