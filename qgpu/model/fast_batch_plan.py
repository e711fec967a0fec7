"""model.fast_batch_plan: what the batched teacher-forcing kernel (fast_batch.c) reads
besides a plan's `Layer` structs, built from a plan's fields (model.fast_plan) on first
use: per layer, the sparse products it runs by rows (projections, gate forms, out_proj:
the per-token kernel's column arrays transposed, a row's entries in ascending input
order, the per-token order of its terms; the MLP's down product runs by the per-token
kernel's columns) and the hidden columns the MLP reads; and whether every layer weight is
finite, which the batch's bit-identity argument needs (fast_batch.c)."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np

from qgpu.model.fast_native import BatchLayer

PRODUCTS = (("proj", ("proj",)), ("gate", ("gate", "gate_hi")), ("out", ("out",)))
LAYER_WEIGHTS = ("proj.val", "gate.val", "gate_hi.val", "up_val", "up1_val", "down.val",
                 "down_hi.val", "out.val", "unit_bias", "conv_w")


@dataclass
class BatchTables:
    table: ctypes.Array  # BatchLayer per layer
    keep: list  # the arrays the table points into
    finite: bool  # every layer weight is finite


def batch_tables(fields: dict, n_layers: int) -> BatchTables:
    table = (BatchLayer * n_layers)()
    keep: list[np.ndarray] = []

    def put(struct, name, array, dtype):
        a = np.ascontiguousarray(array, dtype)
        keep.append(a)
        pointer = ctypes.c_int32 if dtype == np.int32 else ctypes.c_float
        setattr(struct, name, a.ctypes.data_as(ctypes.POINTER(pointer)))

    for i in range(n_layers):
        layer = table[i]
        for name, parts in PRODUCTS:
            rows, ptr, cols, vals = rows_of(fields, i, parts)
            target = getattr(layer, name)
            target.n_rows = len(rows)
            for field, array, dtype in (("row", rows, np.int32), ("ptr", ptr, np.int32),
                                        ("col", cols, np.int32), ("val", vals, np.float32)):
                put(target, field, array, dtype)
        xcols = mlp_columns(fields, i)
        layer.n_xcols = len(xcols)
        put(layer, "xcols", xcols, np.int32)
    return BatchTables(table, keep, finite_layers(fields, n_layers))


def rows_of(fields: dict, i: int, parts: tuple[str, ...]):
    """Layer i's column-sparse products `parts` (their rows disjoint) as rows: (row ids,
    ptr, input index, value), a row's entries in ascending input order."""
    p = f"layers.{i}."
    rows, cols, vals = [], [], []
    for part in parts:
        if p + part + ".ptr" not in fields:
            continue
        ptr = np.asarray(fields[p + part + ".ptr"], np.int64)
        col = np.asarray(fields[p + part + ".col"], np.int64)
        rows.append(np.asarray(fields[p + part + ".row"], np.int64))
        cols.append(np.repeat(col, np.diff(ptr)))
        vals.append(np.asarray(fields[p + part + ".val"], np.float32))
    if not rows:
        return np.zeros(0), np.zeros(1), np.zeros(0), np.zeros(0)
    row, col, val = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    order = np.lexsort((col, row))
    row, col, val = row[order], col[order], val[order]
    ids, start = np.unique(row, return_index=True)
    return ids, np.append(start, len(row)), col, val


def mlp_columns(fields: dict, i: int) -> np.ndarray:
    """The hidden columns layer i's MLP reads (gate forms, up rows, the bias column),
    ascending."""
    p = f"layers.{i}."
    parts = [np.asarray(fields[p + k], np.int64) for k in
             ("gate.col", "gate_hi.col", "up_col", "up1_col") if p + k in fields]
    bias = int(fields.get(p + "bias_col", -1))
    parts.append(np.array([bias] if bias >= 0 else [], np.int64))
    return np.unique(np.concatenate(parts))


def finite_layers(fields: dict, n_layers: int) -> bool:
    """Whether every layer weight is finite: the batched kernel adds weight * x where the
    per-token kernel skips an x of 0, the same sum only when weight * 0 is +-0."""
    return all(bool(np.isfinite(np.asarray(fields[f"layers.{i}.{k}"])).all())
               for i in range(n_layers) for k in LAYER_WEIGHTS
               if f"layers.{i}.{k}" in fields)
