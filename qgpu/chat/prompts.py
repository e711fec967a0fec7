"""chat.prompts: the chat format (ChatML, as Qwen3.5's template writes it, thinking off)
and the advanced mode's templates. The machine's limits and operations are read from the
loaded machine (`machine.ops`), so an operation added to the circuit is offered to the
language part as soon as a checkpoint carries it."""

from __future__ import annotations

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


def advanced_system(ops) -> str:
    ops = list(ops)
    names = sorted({CUDA_OPS.get(op, op) for op in ops})
    missing = [text for op, text in MISSING.items() if op not in ops]
    return ADVANCED_SYSTEM.format(lanes=limits.LANES, last=limits.LANES - 1,
                                  words=limits.GLOBAL_WORDS,
                                  ops=", ".join(names),
                                  missing=("There is " + ", ".join(missing) + "; write "
                                           "kernels without them.") if missing else "")
