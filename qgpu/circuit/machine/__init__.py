"""circuit.machine: the qgpu machine written in the circuit compiler's IR (docs/circuit-plan.md).

One module per concern: `spec` (what this circuit version runs), `logic` (exact step
helpers for hand-written units), `bookkeeping` (token inputs, latches, counters, lane
order), `rom`, `registers`, `alu`, `emission` (result queue, trace tokens), `schedule_pcs`
(lane PCs, min-PC scheduling, HALT) and `build` (the whole circuit for a layer shape).

Owns: the machine circuit. May import: the rest of circuit, primitives, model, protocol,
isa, errors (as circuit).
"""
