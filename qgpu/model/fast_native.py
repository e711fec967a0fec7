"""model.fast_native: builds, loads and checks the native forward kernel
(`fast_kernel.c`), and declares its data layout as ctypes Structures.

`load_kernel()` compiles the C source on first use with the system C compiler (`$CC`,
else gcc, else cc) into a cache directory (`_cache_dir`: `$QGPU_CACHE_DIR`,
else `~/.cache/qgpu/native`), keyed by a hash of the source, the flags and the machine, and
loads it with ctypes. It then checks on this machine that the kernel's float32 exp,
log1p and pairwise sum of squares are bit-identical to numpy's (numpy uses its own SIMD
exp on x86 with AVX2 or AVX512F and the C library's elsewhere; the kernel can do either
and picks the one that matches). It returns None, with a warning, when no compiler is
found or the build fails: callers then use the numpy engine.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from qgpu.errors import QgpuError, setting_ignored
from qgpu.files import atomic_write, clean_leftovers, folder_problem, note_folder_problem

SOURCE = Path(__file__).with_name("fast_kernel.c")
INCLUDED = tuple(Path(__file__).with_name(name) for name in (  # #included by SOURCE
    "fast_math.c", "fast_layout.c", "fast_memo.c", "fast_gdn.c", "fast_team.c", "fast_head.c",
    "fast_batch.c", "fast_batch_ops.c", "fast_multi.c"))
FLAGS = ["-O3", "-g", "-ffp-contract=off", "-fno-fast-math", "-fPIC", "-shared", "-pthread"]
F32P = ctypes.POINTER(ctypes.c_float)
I32P = ctypes.POINTER(ctypes.c_int32)
F64P = ctypes.POINTER(ctypes.c_double)
I32, F32 = ctypes.c_int32, ctypes.c_float


class Csc(ctypes.Structure):
    _fields_ = [("n_cols", I32), ("col", I32P), ("ptr", I32P), ("row", I32P), ("val", F32P)]


class Layer(ctypes.Structure):
    _fields_ = [
        ("kind", I32), ("in_norm", F32P), ("post_norm", F32P),
        ("n_heads", I32), ("n_key_heads", I32), ("n_slots", I32),
        ("head_ids", I32P), ("key_slot", I32P), ("proj", Csc),
        ("n_active", I32), ("active", I32P), ("conv_w", F32P),
        ("neg_exp_a_log", F32P), ("dt_bias", F32P), ("norm_w", F32P),
        ("out", Csc), ("n_out_rows", I32), ("out_rows", I32P),
        ("n_units", I32), ("n_forms", I32), ("bias_col", I32), ("gate", Csc),
        ("unit_form", I32P), ("unit_bias", F32P), ("up_ptr", I32P), ("up_col", I32P),
        ("up_val", F32P), ("down", Csc), ("n_down_rows", I32), ("down_rows", I32P),
        ("gate_hi", Csc), ("down_hi", Csc), ("form_split", I32), ("down_row_split", I32),
        ("n_single", I32), ("up1_col", I32P), ("up1_val", F32P),
        ("form_ptr", I32P), ("form_unit", I32P), ("form_bias", F32P),
        ("form_bias_max", F32P), ("form_bias_min", F32P),
    ]


class BatchRows(ctypes.Structure):
    _fields_ = [("n_rows", I32), ("row", I32P), ("ptr", I32P), ("col", I32P), ("val", F32P)]


class BatchLayer(ctypes.Structure):
    _fields_ = [("proj", BatchRows), ("gate", BatchRows), ("out", BatchRows),
                ("n_xcols", I32), ("xcols", I32P)]


class Head(ctypes.Structure):
    _fields_ = [
        ("n_rows", I32), ("row_ids", I32P), ("ptr", I32P), ("col", I32P), ("val", F32P),
        ("first_zero_row", I32), ("max_row_nnz", I32), ("n_head_cols", I32),
        ("head_cols", I32P), ("group_l1", F32P), ("block_l1", F32P),
        ("n_groups", I32), ("block_rows", I32), ("group_block", I32P), ("group_ptr", I32P),
        ("group_col", I32P), ("group_max", F32P), ("group_min", F32P),
        ("block_ptr", I32P), ("block_col", I32P), ("block_max", F32P), ("block_min", F32P),
    ]


class Model(ctypes.Structure):
    _fields_ = [
        ("hidden", I32), ("n_layers", I32), ("conv_k", I32), ("dk", I32), ("dv", I32),
        ("eps", F32), ("sqrt_dk", F32), ("embed_ptr", I32P), ("embed_col", I32P),
        ("embed_val", F32P), ("final_norm", F32P),
        ("layers", ctypes.POINTER(Layer)), ("head", Head),
        ("h", F32P), ("x", F32P), ("mixed", F32P), ("slots", F32P), ("qkv", F32P),
        ("qn", F32P), ("kn", F32P), ("o", F32P), ("y", F32P), ("units", F32P),
        ("forms", F32P), ("head_x", F32P),
        ("nzq", I32P), ("nzk", I32P), ("nq", I32P), ("nk", I32P), ("nzch", I32P),
        ("newc", I32P), ("proc", I32P), ("unit_list", I32P),
        ("group_order", I32P),
        ("group_ub", F64P), ("conv_out", F32P), ("acts", F32P),
        ("x2", F32P), ("unit_list2", I32P), ("unit_bits", I32P), ("n_visited", I32P),
        ("n_list", I32P), ("memo", ctypes.c_void_p),
    ]


# qgpu_set_counts(buf): buf[k] accumulates, over the tokens run, counter k of fast_kernel.c
# (proj_reused, mlp_reused: layer parts whose result was reused, fast_memo.c; key: the
# floats of their keys compared)
COUNTERS = ("gate", "gate_cols", "proj", "units", "acts", "down", "up", "out", "state_rows",
            "conv", "head_rows", "tokens", "proj_reused", "mlp_reused", "key")
POINTER_DTYPES = {F32P: np.float32, I32P: np.int32, F64P: np.float64}


def field_type(path: str):
    """The ctypes type of a `Model` field named by its path ("layers.3.proj.col",
    "head.n_rows", "hidden")."""
    parts = path.split(".")
    struct = Model
    if parts[0] == "layers":
        struct, parts = Layer, parts[2:]
    for part in parts[:-1]:
        struct = dict(struct._fields_)[part]
    return dict(struct._fields_)[parts[-1]]


def field_owner(model: Model, layers, path: str):
    """(the struct instance holding the field `path`, the field's name)."""
    parts = path.split(".")
    obj = model
    if parts[0] == "layers":
        obj, parts = layers[int(parts[1])], parts[2:]
    for part in parts[:-1]:
        obj = getattr(obj, part)
    return obj, parts[-1]


def check_layout(lib: ctypes.CDLL) -> None:
    """The C compiler's struct layout (qgpu_layout, qgpu_batch_layout: sizeof and every
    field's offset, as offsetof computes them) must be the ctypes Structures': a drift
    would make the kernel read the wrong field."""
    c_side = {}
    for function in (lib.qgpu_layout, lib.qgpu_batch_layout):
        function.restype = ctypes.c_char_p
        function.argtypes = []
        for item in function().decode().split():
            key, value = item.split("=")
            c_side[key] = int(value)
    py_side = {}
    for struct in (Csc, Layer, Head, Model, BatchRows, BatchLayer):
        py_side[f"{struct.__name__}"] = ctypes.sizeof(struct)
        for name, _ in struct._fields_:
            py_side[f"{struct.__name__}.{name}"] = getattr(struct, name).offset
    if c_side != py_side:
        diff = sorted(set(c_side.items()) ^ set(py_side.items()))
        raise RuntimeError(f"the native kernel's struct layout differs from fast_native's "
                      f"ctypes Structures: {diff[:8]}")


_kernel: ctypes.CDLL | None = None
_tried = False


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "gcc", "cc"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


_temporary: list[Path] = []


def _build_dir() -> Path:
    """The cache folder, or (it cannot take a file: a file itself, not writable) a
    temporary folder of this process, said in one line shared with the compile cache's
    note about the same folder (files.note_folder_problem)."""
    folder = _cache_dir()
    problem = folder_problem(folder)
    if problem is None:
        return folder
    note_folder_problem(problem, "the native kernel is built in a temporary folder")
    if not _temporary:
        _temporary.append(Path(tempfile.mkdtemp(prefix="qgpu-native-")))
        atexit.register(shutil.rmtree, _temporary[0], True)
    return _temporary[0]


def _cache_dir() -> Path:
    """$QGPU_CACHE_DIR, else $XDG_CACHE_HOME/qgpu/native, else ~/.cache/qgpu/native when
    HOME names a folder, else .cache/qgpu/native in the checkout (HOME empty: not the
    file system's root)."""
    root = os.environ.get("QGPU_CACHE_DIR")
    if root:
        return Path(root)
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "qgpu" / "native"
    home = os.environ.get("HOME", "")
    if home and os.path.isabs(home) and home != "/" and os.path.isdir(home):
        return Path(home) / ".cache" / "qgpu" / "native"
    return Path(__file__).resolve().parents[2] / ".cache" / "qgpu" / "native"


class _BuildFailed(Exception):
    """The compiler's complaint (its stderr)."""


def build_library(cc: str, source: Path, stem: str, flags: list[str],
                  included: tuple[Path, ...] = ()) -> Path:
    """A shared library built from `source` (and the files it #includes) into the cache
    folder, named by a hash of the sources, flags and machine; tried with -march=native
    (or -march=$QGPU_NATIVE_MARCH: x86-64 builds the portable code, without the AVX2 and
    AVX-512 paths, as a machine without them gets) first. Raises OSError with the
    compiler's complaint."""
    text = source.read_bytes() + b"".join(p.read_bytes() for p in included)
    march = os.environ.get("QGPU_NATIVE_MARCH", "").strip() or "native"
    for extra in ([f"-march={march}"], []):
        all_flags = flags + extra
        key = hashlib.sha256(text + repr((cc, all_flags, platform.machine(),
                                          platform.node())).encode()).hexdigest()[:16]
        target = _build_dir() / f"{stem}_{key}.so"
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_leftovers(target.parent)  # killed builders' partial .so files
        try:  # a temporary name renamed when the build succeeds: concurrent builders agree
            with atomic_write(target) as tmp:
                result = subprocess.run([cc, *all_flags, str(source), "-o", str(tmp), "-lm"],
                                        capture_output=True, text=True)
                if result.returncode != 0:
                    raise _BuildFailed(result.stderr.strip())
            return target
        except _BuildFailed as err:
            error = str(err)
    raise OSError(f"{cc} failed: {error[:2000]}")


def _declare(lib: ctypes.CDLL) -> None:
    lib.qgpu_forward.restype = I32
    lib.qgpu_forward.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                 ctypes.c_void_p, I32]
    lib.qgpu_forward_steady.restype = I32
    lib.qgpu_forward_steady.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, I32]
    lib.qgpu_generate_steady.restype = I32
    lib.qgpu_generate_steady.argtypes = [ctypes.POINTER(Model), *[ctypes.c_void_p] * 6,
                                         ctypes.c_int64, ctypes.c_void_p, I32,
                                         ctypes.c_void_p]
    lib.qgpu_forward_forced.restype = None
    lib.qgpu_forward_forced.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p,
                                        ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_void_p, I32, ctypes.c_void_p,
                                        ctypes.c_void_p]
    lib.qgpu_forward_batch.restype = I32
    lib.qgpu_forward_batch.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                       ctypes.c_void_p, I32, ctypes.c_void_p, I32,
                                       ctypes.c_void_p, ctypes.c_void_p]
    lib.qgpu_forward_multi.restype = I32
    lib.qgpu_forward_multi.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_void_p, I32,
                                       ctypes.c_void_p, I32, ctypes.c_void_p,
                                       ctypes.c_void_p, ctypes.c_void_p]
    lib.qgpu_head_logits_of.restype = None
    lib.qgpu_head_logits_of.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p,
                                        ctypes.c_void_p]
    lib.qgpu_head_logits.restype = None
    lib.qgpu_head_logits.argtypes = [ctypes.POINTER(Model), ctypes.c_void_p]
    lib.qgpu_exp.restype = None
    lib.qgpu_exp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.qgpu_silu.restype = None
    lib.qgpu_silu.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    lib.qgpu_sumsq.restype = None
    lib.qgpu_sumsq.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    lib.qgpu_set_profile.restype = None
    lib.qgpu_set_profile.argtypes = [ctypes.c_void_p]
    lib.qgpu_set_batch_profile.restype = None
    lib.qgpu_set_batch_profile.argtypes = [ctypes.c_void_p]
    lib.qgpu_batch_phases.restype = ctypes.c_char_p
    lib.qgpu_batch_phases.argtypes = []
    lib.qgpu_set_threads.restype = None
    lib.qgpu_set_threads.argtypes = [ctypes.c_int]
    lib.qgpu_set_counts.restype = None
    lib.qgpu_set_counts.argtypes = [ctypes.c_void_p]
    lib.qgpu_memo_new.restype = ctypes.c_void_p
    lib.qgpu_memo_new.argtypes = [I32]
    lib.qgpu_memo_free.restype = None
    lib.qgpu_memo_free.argtypes = [ctypes.c_void_p]
    lib.qgpu_set_memo.restype = None
    lib.qgpu_set_memo.argtypes = [ctypes.c_int]
    lib.qgpu_simd_lanes.restype = I32
    lib.qgpu_simd_lanes.argtypes = []
    lib.qgpu_set_exp_mode.restype = None
    lib.qgpu_set_exp_mode.argtypes = [ctypes.c_int]


def batch_phases(lib: ctypes.CDLL) -> list[str]:
    """The batched kernel's phases, in the order of the buffer qgpu_set_batch_profile
    takes (one double of seconds each, added by the calling thread's passes)."""
    return lib.qgpu_batch_phases().decode().split(",")


def kernel_exp(lib: ctypes.CDLL, x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, np.float32)
    y = np.empty_like(x)
    lib.qgpu_exp(x.ctypes.data, y.ctypes.data, x.size)
    return y


def kernel_silu(lib: ctypes.CDLL, x: np.ndarray) -> np.ndarray:
    y = np.array(x, np.float32)  # a contiguous copy, overwritten
    lib.qgpu_silu(y.ctypes.data, y.size)
    return y


def kernel_sumsq(lib: ctypes.CDLL, x: np.ndarray) -> np.float32:
    x = np.ascontiguousarray(x, np.float32)
    out = np.zeros(1, np.float32)
    lib.qgpu_sumsq(x.ctypes.data, x.size, out.ctypes.data)
    return out[0]


def exp_probe() -> np.ndarray:
    """float32 inputs covering exp's whole range, its cut-offs and the denormal results."""
    rng = np.random.default_rng(0)
    parts = [rng.uniform(-110, 95, 200_000), rng.uniform(-30, 30, 100_000),
             rng.uniform(-104, -86, 20_000),
             [0.0, -0.0, 16.6355, -16.6355, 17.0, -17.0, 20.0, 88.72283935546875,
              88.7228, -103.97208404541015625, -103.972, -88.72, 89.0, -89.0]]
    return np.concatenate([np.asarray(p, np.float32) for p in parts])


def _check_against_numpy(lib: ctypes.CDLL) -> None:
    x = exp_probe()
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x)
    mismatches = []
    for mode in (0, 1):  # numpy's SIMD algorithm, then the C library's expf
        lib.qgpu_set_exp_mode(mode)
        mismatches.append(int(np.count_nonzero(kernel_exp(lib, x).view(np.int32)
                                               != want.view(np.int32))))
        if mismatches[-1] == 0:
            break
    else:
        lib.qgpu_set_exp_mode(int(np.argmin(mismatches)))
        warnings.warn(f"the native kernel's exp differs from numpy's on {min(mismatches)} of "
                      f"{x.size} probes: non-saturated exp results may differ from the "
                      "reference engine by rounding", RuntimeWarning, stacklevel=3)
    rng = np.random.default_rng(1)
    for n in (5, 64, 128, 200, 1000, 2048, 4100):
        v = rng.normal(size=n).astype(np.float32)
        if kernel_sumsq(lib, v) != np.sum(v * v, dtype=np.float32):
            warnings.warn("numpy's float32 sum order differs from the native kernel's: "
                          "norms may differ from the reference by rounding",
                          RuntimeWarning, stacklevel=3)
            break


def threads() -> int:
    """Threads the kernel splits a layer's work over: $QGPU_THREADS (1 or 2), else 1 (with
    one line saying so for any other value)."""
    value = os.environ.get("QGPU_THREADS", "1")
    if value.strip() not in ("1", "2"):
        setting_ignored("QGPU_THREADS", value, "1 or 2", "1 thread")
    return 2 if value.strip() == "2" else 1


def _say(message: str) -> None:
    """One plain line on stderr (not a Python warning with its source location)."""
    print(f"qgpu: {message}", file=sys.stderr, flush=True)


def load_kernel() -> ctypes.CDLL | None:
    """The compiled kernel, or None (with a warning) when it cannot be built."""
    global _kernel, _tried
    if _tried:
        return _kernel
    _tried = True
    if os.environ.get("QGPU_NATIVE", "1") == "0":
        return None
    cc = _compiler()
    slower = "the fast engine runs on numpy, much slower"
    if cc is None:
        _say(f"no C compiler found (set CC): {slower}")
        return None
    try:
        lib = ctypes.CDLL(str(build_library(cc, SOURCE, "fast_kernel", FLAGS, INCLUDED)))
    except (OSError, QgpuError) as err:
        _say(f"could not build the native kernel ({err}): {slower}")
        return None
    _declare(lib)
    lib.qgpu_set_threads(threads())
    check_layout(lib)
    _check_against_numpy(lib)
    _kernel = lib
    return lib
