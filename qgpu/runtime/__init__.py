"""runtime: the generation loop that runs a launch on the compiled model, reads results
from the model's recurrent state, and `--check` (token-by-token comparison with the
interpreter's trace)."""
