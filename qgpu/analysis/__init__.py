"""analysis: measuring compiled circuits, in one place: the instrumented runs that find
every threshold's margin and every value's deviation from its ideal (margins: the fast
engine's own arithmetic; circuit_report: the reference engine, per-layer norms), and the
same over machine launches and the kernel suite (suite_margins).

Owns: margin and deviation reports. May import: circuit (the IR the reports name), model
(the engines it instruments), runtime and suite (the launches it measures), protocol,
interp, isa, errors. Imported by: benchmarks and tests only.
"""
