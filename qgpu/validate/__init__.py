"""validate: the real-GPU validation harness (issue 8). It runs every suite kernel on an
NVIDIA GPU (CuPy / NVRTC) with the same inputs as the reference interpreter and compares
every output array with the interpreter's and the oracle's.

Modules: reference (the interpreter side: case inputs, interpreter and oracle outputs, as a
JSON file that travels to a GPU machine without clang), gpu (the GPU side: NVRTC prelude,
argument marshalling, launches), compare (array comparison, mismatch details), report
(JSON + markdown report), and the CLI `qgpu validate-gpu` / `python -m qgpu.validate`
(validate.command).

Owns: the real-GPU comparison. May import: runtime (its engines, for --engine model),
suite, cuda, interp, isa, errors; CuPy only when a GPU run starts.
"""
