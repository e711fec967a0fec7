"""chat.prompts: the chat format and the advanced mode's templates. A checkpoint's own chat
template (its tokenizer_config.json's "chat_template", or chat_template.jinja) is rendered
by transformers' renderer (what apply_chat_template runs) with thinking off; a checkpoint
without one gets ChatML, as Qwen3.5's template writes it with thinking off. The machine's
limits and operations are read from the loaded machine (`machine.ops`), so an operation
added to the circuit is offered to the language part as soon as a checkpoint carries it."""

from __future__ import annotations

import json
from pathlib import Path

from qgpu.errors import QgpuError
from qgpu.isa import limits

SYSTEM = "You are a helpful assistant."

ADVANCED_SYSTEM = """You answer vector and matrix questions by writing one CUDA kernel that \
computes the answer on a small GPU. The host compiles your kernel and runs it; the results \
are shown to the user.

Rules for the kernel:
- exactly one __global__ function, int or unsigned int arrays and scalars only;
- it runs as ONE warp: grid 1, block at most {lanes} threads (threadIdx.x 0..{last});
- global memory holds at most {words} 32-bit words in all arrays together;
- the GPU computes only these operations: {ops}. {missing}

Answer with one ```cuda block holding the kernel, and put the launch on its first line \
as a comment:
// launch: grid 1 block B arg NAME=VALUES arg NAME=VALUES ...
(an array: comma-separated integers or zeros:N; a scalar: one integer). Then say in one \
sentence which array holds the answer."""

FEEDBACK = """The host could not run your kernel:
{error}
Write the kernel again (same format: one ```cuda block whose first line is the \
// launch: comment) so that it avoids this problem."""

CUDA_OPS = {  # machine operations -> what CUDA source they allow (for the prompt)
    "add": "+", "sub": "-", "and": "&", "or": "|", "xor": "^", "selp": "?:",
    "seteq": "==", "setne": "!=", "setlt.s": "<", "setle.s": "<=", "setgt.s": ">",
    "setge.s": ">=", "mul": "*", "shl": "<<", "shr.u": ">>", "shr.s": ">>",
    "ld.global": "array loads", "st.global": "array stores", "tid": "threadIdx.x",
    "ntid": "blockDim.x", "popc": "__popc", "clz": "__clz", "brev": "__brev",
    "min.s": "min", "max.s": "max", "atom.global.add": "atomicAdd",
}
MISSING = {"mul": "no multiplication (*)", "shl": "no shifts (<<, >>)"}


def chat_prompt(turns: list[tuple[str, str]], system: str = SYSTEM) -> str:
    """ChatML text for (role, content) turns, ending with an open assistant turn."""
    parts = [f"<|im_start|>system\n{system}<|im_end|>\n"]
    parts += [f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in turns]
    parts.append("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    return "".join(parts)


class ChatTemplateError(QgpuError):
    """A checkpoint's chat template that does not render."""


class ChatTemplate:
    """How a conversation becomes the prompt text: `render(turns, system)`."""

    def __init__(self, template: str | None = None, special_tokens: dict | None = None):
        self.template = template  # Jinja source; None: ChatML (chat_prompt)
        self.special_tokens = dict(special_tokens or {})

    @classmethod
    def from_directory(cls, directory: str | Path) -> ChatTemplate:
        """The checkpoint's template: chat_template.jinja, else chat_template.json's or
        tokenizer_config.json's "chat_template" (a string, or the "default" of a list of
        named ones); ChatML when it has none."""
        directory = Path(directory)
        config, template = {}, None
        for name in ("tokenizer_config.json", "chat_template.json"):
            if (directory / name).is_file():
                found = json.loads((directory / name).read_text())
                config = found if name == "tokenizer_config.json" else config
                template = found.get("chat_template", template)
        jinja = directory / "chat_template.jinja"
        template = jinja.read_text() if jinja.is_file() else template
        if isinstance(template, list):
            template = {t.get("name"): t.get("template") for t in template}.get("default")
        special = {k: v for k, v in config.items()
                   if k in ("bos_token", "eos_token", "pad_token", "unk_token")
                   and isinstance(v, str)}
        return cls(template or None, special)

    def render(self, turns: list[tuple[str, str]], system: str = SYSTEM) -> str:
        """The prompt for (role, content) turns after a system message, ending with an
        open assistant turn, thinking off (enable_thinking=False)."""
        if self.template is None:
            return chat_prompt(turns, system)
        from transformers.utils.chat_template_utils import render_jinja_template

        messages = [{"role": "system", "content": system}]
        messages += [{"role": role, "content": content} for role, content in turns]
        try:
            rendered, _ = render_jinja_template(
                conversations=[messages], chat_template=self.template,
                add_generation_prompt=True, enable_thinking=False, **self.special_tokens)
        except Exception as exc:  # jinja2's errors, and the template's raise_exception
            raise ChatTemplateError(f"the checkpoint's chat template does not render: "
                                    f"{type(exc).__name__}: {exc}") from None
        return rendered[0]


def advanced_system(ops) -> str:
    ops = list(ops)
    names = sorted({CUDA_OPS.get(op, op) for op in ops})
    missing = [text for op, text in MISSING.items() if op not in ops]
    return ADVANCED_SYSTEM.format(lanes=limits.LANES, last=limits.LANES - 1,
                                  words=limits.MODEL_GLOBAL_WORDS,
                                  ops=", ".join(names),
                                  missing=("There is " + ", ".join(missing) + "; write "
                                           "kernels without them.") if missing else "")
