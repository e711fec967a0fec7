"""runtime: launches on the compiled model. The generation loop (generate), results read
from the model's recurrent state, `--check` (token-by-token comparison with the
interpreter's trace, or teacher forcing: check), the machine a process compiles once
(compiled), a merged or exported checkpoint's machine (checkpoint), and the model's launch
engines (model_engines), which importing this package registers in qgpu.cuda.ENGINES.

Owns: running launches on model weights. May import: merge, circuit, primitives, model,
cuda, protocol, interp, isa, errors. Imported by: suite, analysis, validate, fuzz, chat,
docgen, cli.
"""

from qgpu.runtime import model_engines  # registers "model", "model-check", "model-forced"

__all__ = ["model_engines"]
