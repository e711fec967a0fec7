"""circuit: the weight compiler. The IR of signals, tables and units (ir, units), the
scheduler and placement that pack them into layers, the emitter that writes them through
the weight primitives (qgpu.primitives), the disk cache, and `machine`: the GPU machine
written in the IR.

Owns: compiling circuits to weights. May import: primitives, model, protocol (the
machine's tokens), isa, errors; never the front end, the runtime or the examples.
"""
