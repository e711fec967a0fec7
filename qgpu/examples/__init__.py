"""examples: small circuits written with the compiler (demos: adder, counter, table
lookups, with their token layouts) and a model built from the weight primitives alone
(table_machine). The compiler's tests, its generated doc, the benchmarks and
`qgpu merge --circuit NAME` use them; the compiler core does not.

Owns: example circuits. May import: circuit, primitives, model, errors.
"""
