"""errors: the exception hierarchy. Every error a user can cause is a QgpuError with a
message that names what is wrong (file:line, PTX line, the limit exceeded). Also
`setting_ignored`: the one line said (once per process) for an environment variable
whose value is not one qgpu takes."""

import sys

_said: set[str] = set()


def setting_ignored(name: str, value: str, expected: str, using: str) -> None:
    """One line on stderr, once per process and variable: `name`=`value` is not
    `expected`, so `using` applies."""
    if name not in _said:
        _said.add(name)
        print(f"qgpu: {name}={value!r} is not {expected}: ignored, {using}", file=sys.stderr,
              flush=True)


class QgpuError(Exception):
    """Base of every error qgpu reports to a user."""


class ProgramError(QgpuError):
    """A machine program breaks a rule of the ISA (bad operand, over a limit)."""


class AssemblyError(ProgramError):
    """Machine assembly text that does not parse; the message carries the line."""


class MachineError(QgpuError):
    """A launch faults at run time: out-of-bounds or misaligned memory access, a barrier
    that cannot complete, the instruction budget exceeded."""


class LaunchError(QgpuError):
    """A launch that cannot start: bad grid/block, arguments that do not fit."""


class CompileError(QgpuError):
    """CUDA source or PTX that the front end rejects (file:line or PTX line in the text)."""


class ProtocolError(QgpuError):
    """A token stream that does not follow the launch protocol."""


class TokenError(ProtocolError, ValueError):
    """A token id outside the protocol's vocabulary (also a ValueError, as before)."""


class CheckMismatch(QgpuError):
    """--check: the model's token differs from the interpreter's expected token."""


class UsageError(QgpuError):
    """A command line that does not parse (argparse's complaint, as one line); `prog` is
    the command it belongs to ("qgpu run")."""

    def __init__(self, message: str, prog: str = "qgpu"):
        super().__init__(message)
        self.prog = prog
