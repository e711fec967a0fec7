"""Evaluating machine units alone, in float32, without compiling the machine (the unit
tests of multiply and the fault detector): a unit's SwiGLU pieces are recorded as gate,
up and down forms over a private residual that gives every signal the units touch its
own dims, and turned into dense matrices."""

import numpy as np

from qgpu.primitives import MlpWriter

F32 = np.float32


class Recorder(MlpWriter):
    """An MlpWriter that keeps each unit's (gate, up, down) forms."""

    def __init__(self):
        super().__init__(weights=None, layer=-1)
        self.units = []

    def unit(self, gate, up, down):
        self.units.append((gate, up, down))
        self.next_unit += 1
        return self.next_unit - 1


def silu(x):
    with np.errstate(over="ignore"):
        return x / (F32(1) + np.exp(-x))


class Residual:
    """Dims for every signal the nodes touch (dim 0 is the constant one)."""

    def __init__(self, nodes):
        self.base, n = {}, 1
        for node in nodes:
            for sig in [r.signal for r in node.inputs()] + node.outputs:
                if sig not in self.base:
                    self.base[sig], n = n, n + sig.width
        self.width = n

    def dims(self, ref):
        return [self.base[ref.signal] + o for o in ref.offsets]

    def matrices(self, node):
        """The node's units as dense (gate, up, down) matrices [units, width]."""
        rec = Recorder()
        node.emit(rec, self.dims, 0, node.outputs)
        mats = [np.zeros((len(rec.units), self.width)) for _ in range(3)]
        for u, forms in enumerate(rec.units):
            for mat, form in zip(mats, forms, strict=True):
                for d, coef in form.items():
                    mat[u, d] += coef
        return mats
