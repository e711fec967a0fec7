"""chat.session: `ChatSession`, one conversation with a merged checkpoint.

Normal mode: a line is a user turn; the language part answers (greedy, the base's text).
`/run FILE.cu --grid G --block B --arg NAME=VALUE ...` (any of `qgpu run`'s launch
options: cli.chat_run) launches that kernel on the machine part instead: the model
writes the launch's trace token by token, the reply shows its records, the kernel's
printf output and the results read from the model's state.

A line the session cannot take (a /run that does not parse or fails, a text line with a
GPU token's name or longer than the language part takes) is one error reply; the
conversation is unchanged and the next line is read.

Advanced mode (`advanced=True`): a line is a vector/matrix question; the language part is
prompted (chat.prompts) to write a CUDA kernel with a `// launch:` line; the host extracts
the ```cuda block, compiles it, and the machine part runs it. A compile error or an
operation or launch the machine does not run is fed back once, and the second kernel is
run. The reply shows the language part's answer, the kernel and the results.

Launches run in their own sequence of the merged model (a fresh state per launch: the
machine's memory table must start empty), text turns in the chat's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qgpu.chat.kernels import KernelRun, request_from_reply, run_request
from qgpu.chat.prompts import FEEDBACK, SYSTEM, ChatTemplate, advanced_system
from qgpu.errors import CheckMismatch, QgpuError

MAX_RECORDS_SHOWN = 40


@dataclass
class Reply:
    text: str  # what the chat shows
    kind: str  # "text" | "launch" | "kernel" | "error"
    runs: list[KernelRun] = field(default_factory=list)
    kernels: list[str] = field(default_factory=list)  # the sources the language part wrote
    errors: list[str] = field(default_factory=list)  # errors fed back


def show_run(run: KernelRun, records: bool = True) -> str:
    lines = [run.summary()]
    if records:
        shown = run.records[:MAX_RECORDS_SHOWN]
        lines += ["records:"] + [f"  {r}" for r in shown]
        if len(run.records) > len(shown):
            lines.append(f"  ... {len(run.records) - len(shown)} more")
    return "\n".join(lines)


class ChatSession:
    """machine: runtime.checkpoint.CheckpointMachine (the GPU part); language: anything
    with generate(prompt) -> text (chat.text.TextModel, or a stand-in); template: how
    turns become its prompt (the checkpoint's chat template; default ChatML)."""

    def __init__(self, machine, language=None, advanced: bool = False, check: bool = True,
                 system: str = SYSTEM, template: ChatTemplate | None = None, run_line=None):
        # run_line(machine, line, check): a /run line's launches (cli.chat_run.run_line,
        # which `qgpu chat` passes: a /run is `qgpu run`, and the CLI sits above the chat)
        self.machine, self.language, self.run_line = machine, language, run_line
        self.advanced, self.check, self.system = advanced, check, system
        self.template = template or ChatTemplate()
        self.turns: list[tuple[str, str]] = []

    def handle(self, line: str) -> Reply:
        line = line.strip()
        if line.startswith("/run"):
            return self.run_command(line)
        if self.language is None:
            return Reply("this checkpoint has no language part (no tokenizer): only /run "
                         "launches", "error")
        try:
            check_line = getattr(self.language, "check_line", None)
            if check_line:   # a GPU token's name, a line longer than it takes
                check_line(line)
            if self.advanced:
                return self.ask_kernel(line)
            turns = [*self.turns, ("user", line)]
            answer = self.language.generate(self.template.render(turns, self.system)).strip()
        except QgpuError as exc:
            return _error(exc)
        self.turns = [*turns, ("assistant", answer)]
        return Reply(answer, "text")

    def run_command(self, line: str) -> Reply:
        if self.run_line is None:
            return Reply("/run is not available in this session (it takes qgpu chat's "
                         "launcher)", "error")
        try:
            runs = self.run_line(self.machine, line, check=self.check)
        except (QgpuError, ValueError, OverflowError, MemoryError, OSError) as exc:
            # ValueError/OverflowError/MemoryError: a value the launch's own checks missed
            return _error(exc)
        if isinstance(runs, str):   # --list
            return Reply(runs, "launch")
        text = "\n".join(show_run(run) for run in runs)
        return Reply(text, "launch", runs)

    def ask_kernel(self, question: str) -> Reply:
        system = advanced_system(self.machine.ops)
        turns = [("user", question)]
        kernels, errors = [], []
        for attempt in range(2):  # the first kernel and one retry
            reply = self.language.generate(self.template.render(turns, system))
            try:
                request = request_from_reply(reply)
                kernels.append(request.source)
                run = run_request(self.machine, request, check=self.check)
            except CheckMismatch as exc:  # the machine's fault, not the kernel's: shown
                return Reply(f"error: {' '.join(str(exc).split())}", "error", [], kernels,
                             errors)
            except QgpuError as exc:
                error = " ".join(str(exc).split())
                errors.append(error)
                if attempt == 1:
                    return Reply(f"the kernel could not run after one retry: {error}",
                                 "error", [], kernels, errors)
                turns += [("assistant", reply), ("user", FEEDBACK.format(error=error))]
                continue
            prose = _prose(reply)
            text = "\n".join(part for part in (
                prose, "kernel:", request.source.rstrip(), "result:", show_run(run, False))
                if part)
            self.turns += [("user", question), ("assistant", prose or reply)]
            return Reply(text, "kernel", [run], kernels, errors)
        raise AssertionError("the loop returns on its second attempt")


def _error(exc: BaseException) -> Reply:
    """One error line (a QgpuError's own message; any other error named by its type)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    if not isinstance(exc, QgpuError):
        text = f"{type(exc).__name__}: {text}"
    return Reply(f"error: {text}", "error")


def _prose(reply: str) -> str:
    """The reply without its code blocks."""
    import re

    return re.sub(r"```.*?```", "", reply, flags=re.S).strip()
