"""docgen: qgpu's one doc generator. Every generated part of docs/ comes from the code, and
a test checks each committed doc against the generated text, so the docs cannot drift:

    python -m qgpu.docgen [isa] [circuit] [layers] [merge] [readme]   # default: all

- isa_doc: the tables of docs/isa.md and docs/protocol.md (constants, operations, vocabulary);
- circuit_doc: docs/circuit.md's description of the demo circuits, from the compiler's plan;
- layers_doc: docs/machine-layers.md, the layer map of the default compiled machine
  (loads or compiles the machine);
- merge_doc: docs/merge.md's size of a 2B merge;
- readme_doc: README.md's limits, suite and machine figures and performance table (from
  benchmarks/results/*.json).

Owns: docs generation only. May import every stage it documents (isa, protocol, circuit,
examples, runtime); nothing imports docgen but its tests.
"""
