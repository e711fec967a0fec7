"""Float32 oracles the suite's float kernels share: fma rounded once, as the GPU's fma.rn
(clang contracts a * b + c into one fma, as nvcc does by default). Independent of qgpu:
the exact value from fractions, rounded to the nearest float32, ties to even."""
from fractions import Fraction

import numpy as np


def fma32(a, x, y) -> np.float32:
    """a * x + y rounded once to float32 (ties to even), from the exact rational value."""
    a, x, y = (np.float32(v) for v in (a, x, y))
    if not all(np.isfinite(v) for v in (a, x, y)):
        return np.float32(np.float64(a) * np.float64(x) + np.float64(y))
    exact = Fraction(float(a)) * Fraction(float(x)) + Fraction(float(y))
    if exact == 0:
        return np.float32(0.0)
    r = np.float32(float(exact))
    candidates = (np.nextafter(r, np.float32(-np.inf)), r, np.nextafter(r, np.float32(np.inf)))
    return min((c for c in candidates if np.isfinite(c)),
               key=lambda c: (abs(Fraction(float(c)) - exact),
                              int(np.array([c], np.float32).view(np.uint32)[0]) & 1))


def fma32_array(a, x, y) -> np.ndarray:
    """fma32 elementwise over broadcast arrays."""
    a, x, y = np.broadcast_arrays(np.float32(a) if np.isscalar(a) else a, x, y)
    return np.array([fma32(p, q, r) for p, q, r in zip(a.ravel(), x.ravel(), y.ravel(),
                                                       strict=True)],
                    np.float32).reshape(a.shape)
