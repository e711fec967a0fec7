"""model.fast_binding: `Binding`, a state's arrays as the native kernel takes them.

Per state, the pointer tables to its recurrent and conv arrays, and two kinds of side
tables about its conv windows, each kept up to date by the kernel path that uses it:
- the window lists (per GDN layer, the channels whose window holds a nonzero), read and
  kept by the plain per-token kernel, the teacher-forced one and the batched one;
- the steady tables (fast_gdn.c, `Steady`: each channel's newest input, its window's
  conv output, the channels whose window is not constant), read and kept by
  qgpu_forward_steady, the generating path.
Each is rebuilt from the conv state when the other path has run since it was last kept,
or when the state's position is not the one the plan left it at (another engine or plan
stepped it). A binding is dropped with its state (a weak reference), so a finished
launch's arrays are not kept alive by the plan.
"""

from __future__ import annotations

import ctypes
import operator
import weakref
from collections.abc import Callable

import numpy as np

from qgpu.model.state import ModelState

F32 = np.float32


def _table(arrays: list[np.ndarray | None]) -> tuple[int, ctypes.Array]:
    """(address of a C array of pointers to `arrays` (NULL for None), the array)."""
    ptrs = (ctypes.c_void_p * len(arrays))()
    for k, a in enumerate(arrays):
        if a is not None:
            ptrs[k] = a.ctypes.data
    return ctypes.cast(ptrs, ctypes.c_void_p).value, ptrs


class Binding:
    """One state's tables (see the module docstring). `position` is the state's position
    after the last token this plan ran on it."""

    def __init__(self, state: ModelState, n_layers: int, live: set[int],
                 forget: Callable[[weakref.ref], None]):
        arrays = [state.recurrent.get(i) for i in range(n_layers)]
        arrays += [state.conv.get(i) for i in range(n_layers)]
        for a in arrays:
            if a is not None and (a.dtype != F32 or not a.flags.c_contiguous
                                  or not a.flags.writeable):
                raise ValueError("state arrays must be writable C-contiguous float32")
        self.arrays = arrays
        # what `matches` compares (the dicts' values in order: cheaper than the tables)
        self._values = list(state.recurrent.values()) + list(state.conv.values())
        self.ref = weakref.ref(state, forget)
        self.position = state.position
        self.states, self._states = _table(arrays[:n_layers])
        self.convs, self._convs = _table(arrays[n_layers:])
        self.live = {i: state.conv[i] for i in sorted(live) if i in state.conv}
        self.counts = np.zeros(n_layers, np.int32)
        self._windows = {i: np.zeros(len(c), np.int32) for i, c in self.live.items()}
        self.windows, self._windows_table = _table(
            [self._windows.get(i) for i in range(n_layers)])
        self.n_moving = np.zeros(n_layers, np.int32)
        self._last = {i: np.zeros(len(c), F32) for i, c in self.live.items()}
        self._out = {i: np.zeros(len(c), F32) for i, c in self.live.items()}
        # per layer, a bitmap: bit c & 31 of word c >> 5 set where channel c is moving
        self._moving = {i: np.zeros((len(c) + 31) // 32, np.uint32)
                        for i, c in self.live.items()}
        self.lasts, self._lasts_table = _table([self._last.get(i) for i in range(n_layers)])
        self.outs, self._outs_table = _table([self._out.get(i) for i in range(n_layers)])
        self.movings, self._movings_table = _table(
            [self._moving.get(i) for i in range(n_layers)])
        self._windows_ok = self._steady_ok = False

    def matches(self, state: ModelState, n_layers: int) -> bool:
        """Still this state's arrays, at the position this plan left it."""
        if self.ref() is not state or self.position != state.position:
            return False
        current = list(state.recurrent.values()) + list(state.conv.values())
        return len(current) == len(self._values) \
            and all(map(operator.is_, self._values, current))

    def conv_moved(self) -> None:
        """The conv state was stepped by a kernel that keeps neither side table (the
        many-sequence step): both are rebuilt from it when next used."""
        self._windows_ok = self._steady_ok = False

    def window_tables(self) -> tuple[int, int, int, int]:
        """(states, convs, windows, counts) for the plain kernels, the window lists
        rebuilt first when the steady path ran last; the steady tables are stale after."""
        if not self._windows_ok:
            for i, conv in self.live.items():
                nonzero = np.flatnonzero(np.any(conv != 0, axis=1))
                self._windows[i][:len(nonzero)] = nonzero
                self.counts[i] = len(nonzero)
            self._windows_ok = True
        self._steady_ok = False
        return self.states, self.convs, self.windows, self.counts.ctypes.data

    def steady_tables(self) -> tuple[int, ...]:
        """(states, convs, lasts, outs, movings, n_moving) for qgpu_forward_steady, rebuilt
        first when a plain kernel ran last (each channel's newest input from its window;
        the channels with a nonzero window moving, so that their outputs are computed
        before they are used; the others' output 0, what the plain path gives a window of
        zeros); the window lists are stale after."""
        if not self._steady_ok:
            for i, conv in self.live.items():
                self._last[i][:] = conv[:, -1]
                self._out[i][:] = 0
                moving = np.any(conv != 0, axis=1)
                packed = np.zeros(4 * len(self._moving[i]), np.uint8)
                bits = np.packbits(moving, bitorder="little")
                packed[:len(bits)] = bits
                self._moving[i][:] = packed.view("<u4")
                self.n_moving[i] = int(np.count_nonzero(moving))
            self._steady_ok = True
        self._windows_ok = False
        return (self.states, self.convs, self.lasts, self.outs, self.movings,
                self.n_moving.ctypes.data)
