"""circuit: the weight compiler. Primitives that emit the weights of one piece of a
Qwen3.5 layer (row memories, latches, exact MLP units), the IR of signals, tables and
units, the scheduler that packs them into layers, and the emitter."""
