"""model: Qwen3.5 layer math (numpy reference), the fast sparse engine, sparse weights and
Hugging Face checkpoint I/O (merging lives in qgpu.merge).

Owns: the substrate the circuits are compiled into. May import: errors, progress; it
knows nothing of the GPU (lint-imports forbids isa, interp, protocol, cuda, suite)."""
