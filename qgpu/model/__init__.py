"""model: Qwen3.5 layer math (numpy reference), the fast sparse engine, Hugging Face
checkpoint I/O, and merging the circuit with a base model."""
