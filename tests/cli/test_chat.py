"""qgpu.chat: the host side of chat launches (fast: parsing, prompts) and, slow, a
ChatSession on the machine merged into a random base (fast engine) with the scripted
language stand-in: normal mode text and /run launches, advanced mode kernels with one
retry after a compile error or an operation the machine does not run."""

import json

import pytest

from qgpu.chat import ChatSession
from qgpu.chat.kernels import (
    KernelRequestError,
    extract_cuda,
    request_from_reply,
)
from qgpu.chat.prompts import ChatTemplate, ChatTemplateError, advanced_system, chat_prompt
from qgpu.cli.chat_run import parse_line, run_line
from tests.merge.machine_helpers import ScriptedLanguage, merged_machine

# merged machines hold a few GiB each: one xdist worker takes every test that builds them
pytestmark = pytest.mark.xdist_group("merged_machine")

SEVEN = "__global__ void k(int *out) { if (threadIdx.x == 0) out[0] = 7 + out[1]; }\n"
SUM_REPLY = """Here is a kernel that adds the four numbers.
```cuda
// launch: grid 1 block 4 arg v=3,5,7,9 arg out=zeros:1
__global__ void vsum(int *v, int *out) {
    if (threadIdx.x == 0) out[0] = v[0] + v[1] + v[2] + v[3];
}
```
The sum is in out[0]."""
BROKEN_REPLY = """```cuda
// launch: grid 1 block 4 arg v=3,5,7,9 arg out=zeros:1
__global__ void vsum(int *v, int *out) { out[0] = v[0] + ; }
```"""
UNSUPPORTED = {  # an operation the machine may lack -> a kernel using it
    "mul": "out[0] = v[0] * v[1];",
    "shl": "out[0] = v[0] << v[1];",
    "min.s": "out[0] = min(v[0], v[1]);",
}


def test_extract_and_parse_a_reply():
    req = request_from_reply(SUM_REPLY)
    assert req.grid == 1 and req.block == 4 and req.args == ["v=3,5,7,9", "out=zeros:1"]
    assert req.source.startswith("// launch:") and "vsum" in req.source
    with pytest.raises(KernelRequestError, match="no ```cuda code block"):
        extract_cuda("no code here")
    with pytest.raises(KernelRequestError, match="no '// launch:"):
        request_from_reply("```cuda\n__global__ void k(int *o) {}\n```")
    with pytest.raises(KernelRequestError, match="names no block size"):
        request_from_reply("```cuda\n// launch: grid 1 arg o=1\n```")


def test_run_command_parsing(tmp_path):
    """/run lines are read by `qgpu run`'s own parser: its options, dim3 shapes included."""
    args = parse_line(f"/run {tmp_path}/k.cu --grid 2,2 --block 4 --arg out=0,35 "
                      "--shared-bytes 16 --symbol tab=1,2 --budget 50 --printf-words 8")
    assert (args.file, args.grid, args.block, args.arg) == (f"{tmp_path}/k.cu", "2,2", "4",
                                                            ["out=0,35"])
    assert (args.shared_bytes, args.symbol, args.budget, args.printf_words) == (
        16, ["tab=1,2"], 50, 8)
    with pytest.raises(KernelRequestError, match="unrecognized arguments: --bogus"):
        parse_line(f"/run {tmp_path}/k.cu --bogus 3")
    with pytest.raises(KernelRequestError, match="cannot split the line"):
        parse_line(f"/run {tmp_path}/k.cu --arg 'a=1")
    with pytest.raises(KernelRequestError, match="--model, --engine does not apply"):
        parse_line(f"/run {tmp_path}/k.cu --model x --engine interp")
    with pytest.raises(KernelRequestError, match="usage: /run"):
        parse_line("/run")


def test_prompts_name_the_machines_operations():
    text = advanced_system(["add", "sub", "ld.global", "st.global", "tid"])
    assert "no multiplication (*)" in text and "no shifts" in text and "+" in text
    assert "block at most 4 threads" in text and "128 32-bit words" in text
    assert "no multiplication" not in advanced_system(["add", "mul", "shl"])
    prompt = chat_prompt([("user", "hi")])
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert "<|im_start|>user\nhi<|im_end|>" in prompt


# Qwen3's chat template, cut to what a text chat uses (system, user and assistant turns, the
# generation prompt with the thinking switch)
QWEN_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}")


def test_the_checkpoints_own_chat_template_renders_with_thinking_off(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"chat_template": QWEN_TEMPLATE, "eos_token": "<|im_end|>"}))
    turns = [("user", "hi"), ("assistant", "hello"), ("user", "sum 1 2")]
    template = ChatTemplate.from_directory(tmp_path)
    assert template.template == QWEN_TEMPLATE
    assert template.render(turns, "S") == chat_prompt(turns, "S")  # Qwen's = our ChatML
    (tmp_path / "chat_template.jinja").write_text(
        "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"
        "{% if enable_thinking is false %}(no thinking){% endif %}")
    assert ChatTemplate.from_directory(tmp_path).render([("user", "hi")], "S") == \
        "[system] S\n[user] hi\n(no thinking)"
    (tmp_path / "chat_template.jinja").write_text("{{ raise_exception('no system role') }}")
    with pytest.raises(ChatTemplateError, match="no system role"):
        ChatTemplate.from_directory(tmp_path).render([("user", "hi")])


def test_chatml_when_the_checkpoint_has_no_template(tmp_path):
    template = ChatTemplate.from_directory(tmp_path)
    assert template.template is None
    assert template.render([("user", "hi")], "S") == chat_prompt([("user", "hi")], "S")


def test_a_session_prompts_with_its_template():
    class Language:
        prompts: list[str] = []

        def generate(self, prompt):
            self.prompts.append(prompt)
            return "ok"

    language = Language()
    template = ChatTemplate("{% for m in messages %}<{{ m.content }}>{% endfor %}")
    assert ChatSession(None, language, template=template).handle("hi").text == "ok"
    assert language.prompts == ["<You are a helpful assistant.><hi>"]


@pytest.fixture(scope="module")
def machine():
    return merged_machine("m64_tied_linear")[0]


@pytest.mark.slow
def test_normal_mode_text_and_run(machine, tmp_path):
    language = ScriptedLanguage(["Hello! Ask me anything."])
    chat = ChatSession(machine, language, run_line=run_line)
    reply = chat.handle("hi there")
    assert (reply.kind, reply.text) == ("text", "Hello! Ask me anything.")
    assert "<|im_start|>user\nhi there<|im_end|>" in language.prompts[0]
    (tmp_path / "k.cu").write_text(SEVEN)
    reply = chat.handle(f"/run {tmp_path}/k.cu --grid 1 --block 4 --arg out=0,35")
    assert reply.kind == "launch", reply.text
    run = reply.runs[0]
    assert run.after == {"out": [42, 35]} and run.check
    assert "out: [0, 35] -> [42, 35]" in reply.text and "EXEC block 0" in reply.text
    assert "HALT" in reply.text
    bad = chat.handle(f"/run {tmp_path}/k.cu --grid 2 --block 16 --arg out=0,35")
    assert bad.kind == "error" and "warp" in bad.text
    assert language.prompts == language.prompts[:1]  # /run never asks the language part


@pytest.mark.slow
def test_advanced_mode_runs_the_kernel_after_one_retry(machine):
    language = ScriptedLanguage([BROKEN_REPLY, SUM_REPLY])
    reply = ChatSession(machine, language, advanced=True).handle("What is 3 + 5 + 7 + 9?")
    assert reply.kind == "kernel", reply.text
    assert reply.runs[0].after["out"] == [24]
    assert len(reply.errors) == 1 and "chat.cu" in reply.errors[0]
    assert reply.errors[0] in language.prompts[1]  # the error was fed back
    assert "ONE warp" in language.prompts[0]
    assert "The sum is in out[0]." in reply.text and "v[0] + v[1]" in reply.text
    assert "out: [0] -> [24]" in reply.text


@pytest.mark.slow
def test_advanced_mode_feeds_back_an_operation_the_machine_lacks(machine):
    missing = [op for op in UNSUPPORTED if op not in machine.ops]
    if not missing:
        pytest.skip("the machine runs every candidate operation")
    body = UNSUPPORTED[missing[0]]
    first = SUM_REPLY.replace("out[0] = v[0] + v[1] + v[2] + v[3];", body)
    language = ScriptedLanguage([first, SUM_REPLY])
    reply = ChatSession(machine, language, advanced=True).handle("sum 3 5 7 9")
    assert reply.kind == "kernel" and reply.runs[0].after["out"] == [24]
    assert "not in" in reply.errors[0] and reply.errors[0] in language.prompts[1]


@pytest.mark.slow
def test_advanced_mode_gives_up_after_one_retry(machine):
    language = ScriptedLanguage([BROKEN_REPLY, "I cannot write it."])
    reply = ChatSession(machine, language, advanced=True).handle("sum 3 5 7 9")
    assert reply.kind == "error" and "no ```cuda code block" in reply.text
    assert len(language.prompts) == 2


def test_export_and_chat_refuse_bad_directories(tmp_path, capsys):
    from qgpu.cli import main

    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    assert main(["export-machine", "--out", str(tmp_path / "full"), "--quiet"]) == 1
    assert "exists and is not empty" in capsys.readouterr().err
    assert main(["chat", "--model", str(tmp_path / "full")]) == 1
    assert "has no qgpu_merge.json" in capsys.readouterr().err


def test_a_check_mismatch_is_shown_not_fed_back(monkeypatch):
    """A trace that differs from the interpreter's is the machine's fault: the reply says
    so and the language part is not asked to rewrite a correct kernel."""
    import qgpu.chat.session as session
    from qgpu.errors import CheckMismatch

    def mismatch(machine, request, check=True):
        raise CheckMismatch("--check: token 3 of the trace differs")

    monkeypatch.setattr(session, "run_request", mismatch)

    class Machine:
        ops = ("add", "ld.global", "st.global", "tid")

    language = ScriptedLanguage([SUM_REPLY])
    reply = ChatSession(Machine(), language, advanced=True).handle("sum 3 5 7 9")
    assert reply.kind == "error" and "token 3 of the trace differs" in reply.text
    assert len(language.prompts) == 1 and reply.errors == []
