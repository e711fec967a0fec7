"""docs/circuit.md is generated from the compiler's plan: the doc of a compiled circuit
names every layer, table, head and unit, and the committed doc equals the generated one."""

from qgpu.circuit.compile import compile_circuit
from qgpu.circuit.schedule import LayerShape
from qgpu.docgen import circuit_doc
from qgpu.examples.demos import adder_machine


def test_doc_of_a_compiled_circuit(tmp_path):
    compiled = compile_circuit(adder_machine().circuit, LayerShape.small(), cache=False)
    text = circuit_doc.circuit_doc(compiled)
    for L in range(compiled.plan.n_layers):
        assert f"#### Layer {L} " in text
    for node in compiled.plan.order:
        if node.sublayer != "embed":
            assert f"`{node.name}`" in text
    assert "key head 2: copy 1, stored bits 0..14; read `add.b` (lag 0, 1)" in text
    assert "add `sum` (112 units)" in text
    path = tmp_path / "circuit.md"
    path.write_text(f"# doc\n{circuit_doc.BEGIN}\nstale\n{circuit_doc.END}\nend\n")
    assert circuit_doc.rewrite(path)
    assert not circuit_doc.rewrite(path)  # a second run changes nothing
    assert path.read_text().endswith(f"{circuit_doc.END}\nend\n")


def test_committed_doc_is_up_to_date():
    text = circuit_doc.DOC.read_text()
    begin = text.index(circuit_doc.BEGIN) + len(circuit_doc.BEGIN) + 1
    assert text[begin:text.index(circuit_doc.END)] == circuit_doc.generated_section(), \
        "run: .venv/bin/python -m qgpu.docgen circuit"
