"""suite: the kernel suite under kernels/ -- its loader, its spec checks and its runner.

Each suite kernel is a pair of files: `kernels/<name>.cu` (CUDA source) and
`kernels/<name>.py` (spec) holding

  KERNEL = "<the __global__ function's name>"
  LAUNCHES = [{"grid": G, "block": B, "args": {"param": value, ...}}, ...]
  def oracle(args, grid, block) -> dict[str, np.ndarray]

`args` is keyed by the parameter names of the kernel's signature: 1-D numpy arrays of one
of ARRAY_DTYPES for pointer parameters (int32/uint32, float32, int8/uint8/bool,
int16/uint16: what the launch API takes for the element type), Python ints for integer
scalars and Python or numpy floats for `float` scalars. The oracle computes, independently of any
GPU model, the final contents of every pointer argument. Files whose name starts with "_"
are not kernels.

This module also holds the C integer semantics (32-bit wrap-around, truncating division)
that the oracles and the CUDA fuzzer share.

Owns: the kernel suite. May import: cuda (compiling, the signature parser, launching),
isa, errors, campaign (`--ray`); `main` and its campaign workers' set-up alone import
qgpu.runtime, for a model engine (the README explains this one import against the
pipeline).
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType

import numpy as np

from qgpu.campaign import add_arguments, batch_size, batched, open_pool
from qgpu.cuda import BATCH_ENGINES, launch_many
from qgpu.cuda import compile as compile_cuda
from qgpu.cuda.shape import launch_shape
from qgpu.cuda.signature import parse_kernels
from qgpu.errors import QgpuError
from qgpu.isa import limits

KERNELS_DIR = Path(__file__).resolve().parent.parent / "kernels"
DEMO_KERNEL = "dot"   # `qgpu demo`'s kernel: kernels/dot.cu

ARRAY_DTYPES = tuple(np.dtype(t) for t in ("int32", "uint32", "float32", "int8", "uint8",
                                             "bool", "int16", "uint16"))


class SuiteError(QgpuError):
    """A suite kernel whose files or spec break the suite's rules."""


# --- C integer semantics (32-bit) -------------------------------------------------------


def i32(x: int) -> int:
    """x wrapped to a signed 32-bit value (C's int after wrap-around)."""
    return limits.s32(int(x))


def u32(x: int) -> int:
    """x wrapped to an unsigned 32-bit value."""
    return limits.u32(int(x))


def c_div(a: int, b: int) -> int:
    """C's truncating division of two ints (b != 0; the caller avoids INT_MIN / -1)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def c_rem(a: int, b: int) -> int:
    """C's remainder: a - b * (a / b), the sign follows the dividend."""
    return a - b * c_div(a, b)


def i32_array(values) -> np.ndarray:
    """An int32 array of Python ints, each wrapped to 32 bits first."""
    return np.array([i32(v) for v in values], dtype=np.int32)


def u32_array(values) -> np.ndarray:
    """A uint32 array of Python ints, each wrapped to 32 bits first."""
    return np.array([u32(v) for v in values], dtype=np.uint32)


# --- kernel signature --------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    ctype: str          # the type without the name, e.g. "const int*" ("unsigned" for uint32_t)
    pointer: bool
    unsigned: bool
    dtype: str | None = None   # numpy dtype of the (pointed-to) element; None: raw words


def kernel_params(source: str, kernel: str) -> list[Param]:
    """The parameters of `__global__ void <kernel>(...)` in source, in order (read by the
    front end's parser, cuda.signature)."""
    # the file name compiled_module's qgpu.cuda.compile gives: one clang AST per source
    found = [k for k in parse_kernels(source, "kernel.cu") if k.name == kernel]
    if not found:
        raise SuiteError(f"no `__global__ void {kernel}(...)` in the source")
    return [Param(p.name, f"{'const ' if p.const else ''}{p.ctype}{'*' if p.pointer else ''}",
                  p.pointer, not p.signed, p.dtype) for p in found[0].params]


# --- the spec ----------------------------------------------------------------------------


@dataclass
class KernelSpec:
    name: str                       # file stem
    kernel: str                     # __global__ function name
    source: str
    params: list[Param]
    launches: list[dict]
    module: ModuleType
    path: Path

    def oracle(self, launch: dict) -> dict[str, np.ndarray]:
        """The oracle's final contents of every pointer argument, checked for shape."""
        args = copy_args(launch["args"])
        result = self.module.oracle(args, launch["grid"], launch["block"])
        pointers = [p.name for p in self.params if p.pointer]
        if not isinstance(result, dict) or sorted(result) != sorted(pointers):
            raise SuiteError(f"{self.name}: oracle must return a dict keyed by {pointers}")
        out = {}
        for name in pointers:
            given = launch["args"][name]
            value = np.asarray(result[name])
            if value.shape != given.shape:
                raise SuiteError(f"{self.name}: oracle's {name} has shape {value.shape}, "
                                 f"the argument {given.shape}")
            out[name] = wrap_to_dtype(value, given.dtype)
        return out

    def case_id(self, index: int) -> str:
        launch = self.launches[index]
        return f"{self.name}[{index}:g{launch['grid']}b{launch['block']}]"


def copy_args(args: dict) -> dict:
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}


def wrap_to_dtype(values, dtype: np.dtype) -> np.ndarray:
    """values in the argument's dtype: integers of any size wrapped to its width C-style;
    for float32 a float32 array (kept bit for bit) or its bit patterns as 32-bit integers
    (a float64 array would have been rounded by someone: refused); for bool, nonzero."""
    dtype = np.dtype(dtype)
    given = np.asarray(values)
    if dtype.kind == "f":
        if given.dtype == np.float32:
            return given.copy()
        if given.dtype.kind in "iu" and given.dtype.itemsize == 4:
            return given.astype(np.uint32).view(np.float32)
        raise SuiteError(f"a float32 output must be a float32 array (or its uint32 bit "
                         f"patterns), not {given.dtype}")
    if dtype.kind == "b":
        return given.astype(bool)
    bits = 8 * dtype.itemsize
    flat = [int(v) & ((1 << bits) - 1) for v in np.asarray(values, dtype=object).ravel()]
    unsigned = np.dtype(f"uint{bits}")
    return np.array(flat, dtype=unsigned).reshape(np.shape(values)).view(dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal dtype, shape and bytes (a NaN equals the same NaN, -0 differs from +0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def check_launch_config(name: str, params: list[Param], launch: dict, index: int) -> None:
    where = f"{name}: launch {index}"
    if not isinstance(launch, dict) or set(launch) != {"grid", "block", "args"}:
        raise SuiteError(f"{where}: must be a dict with keys grid, block, args")
    grid, block, args = launch["grid"], launch["block"], launch["args"]
    if isinstance(grid, list) or isinstance(block, list):
        raise SuiteError(f"{where}: give grid and block as ints or tuples")
    try:
        launch_shape(grid, block)     # the ISA's limits (the model's: model_sized)
    except QgpuError as exc:
        raise SuiteError(f"{where}: {exc}") from None
    names = [p.name for p in params]
    if not isinstance(args, dict) or sorted(args) != sorted(names):
        raise SuiteError(f"{where}: args {sorted(args)} != parameters {sorted(names)}")
    words = 0
    for p in params:
        value = args[p.name]
        if p.pointer:
            if not isinstance(value, np.ndarray) or value.dtype not in ARRAY_DTYPES \
                    or value.ndim != 1 or value.size == 0:
                raise SuiteError(f"{where}: {p.name} must be a non-empty 1-D numpy array of "
                                 f"{'/'.join(d.name for d in ARRAY_DTYPES)}")
            words += -(-value.nbytes // 4)       # each array starts on a word
        elif p.dtype == "float32" and isinstance(value, float | np.floating):
            continue
        elif not isinstance(value, int) or isinstance(value, bool) \
                or not -(1 << 31) <= value <= limits.WORD_MASK:
            raise SuiteError(f"{where}: scalar {p.name} must be a 32-bit Python int")
    if words > limits.GLOBAL_WORDS:
        raise SuiteError(f"{where}: arrays take {words} words > {limits.GLOBAL_WORDS}")


def model_sized(spec: KernelSpec, launch: dict) -> bool:
    """Whether a launch fits the compiled model machine's sizes (isa.limits' MODEL_*: its
    shape, and its program and data as linked): the others run on the interpreter only,
    for now."""
    shape = launch_shape(launch["grid"], launch["block"])
    if not limits.fits_model(shape.ctas, shape.threads):
        return False
    fn = compiled_module(spec.source).get_function(spec.kernel)
    program = fn.link(launch["grid"], launch["block"], positional_args(spec, launch["args"]))[0]
    return program.memory_sizes == limits.MODEL_MEMORY and \
        len(program.blocks) <= limits.MODEL_ROM_BLOCKS


def load_kernel(spec_path: Path) -> KernelSpec:
    """Load and check one kernel's spec (`<name>.py`) and source (`<name>.cu`)."""
    spec_path = Path(spec_path)
    name = spec_path.stem
    cu_path = spec_path.with_suffix(".cu")
    if not cu_path.exists():
        raise SuiteError(f"{name}: {cu_path.name} is missing")
    import_spec = importlib.util.spec_from_file_location(f"qgpu_suite_{name}", spec_path)
    module = importlib.util.module_from_spec(import_spec)
    import_spec.loader.exec_module(module)
    for attr in ("KERNEL", "LAUNCHES", "oracle"):
        if not hasattr(module, attr):
            raise SuiteError(f"{name}: {spec_path.name} does not define {attr}")
    source = cu_path.read_text()
    params = kernel_params(source, module.KERNEL)
    launches = list(module.LAUNCHES)
    if not launches:
        raise SuiteError(f"{name}: LAUNCHES is empty")
    for index, launch in enumerate(launches):
        check_launch_config(name, params, launch, index)
    return KernelSpec(name, module.KERNEL, source, params, launches, module, spec_path)


def load_named(name: str) -> KernelSpec:
    """Suite kernel `name` (kernels/<name>.py and .cu)."""
    path = KERNELS_DIR / f"{name}.py"
    if name.startswith("_") or not path.is_file():
        known = sorted(p.stem for p in KERNELS_DIR.glob("*.py") if not p.name.startswith("_"))
        raise SuiteError(f"no suite kernel {name!r} (kernels/: {', '.join(known)})")
    return load_kernel(path)


def kernel_source(name: str) -> str:
    """The CUDA source of suite kernel `name` (kernels/<name>.cu)."""
    path = KERNELS_DIR / f"{name}.cu"
    try:
        return path.read_text()
    except OSError as exc:
        raise SuiteError(f"cannot read {path}: {exc.strerror}") from None


def load_suite(directory: Path | str | None = None) -> list[KernelSpec]:
    """Every kernel of the suite, sorted by name. A .cu without a .py (or the reverse) is
    an error, so a kernel cannot silently drop out."""
    directory = Path(directory) if directory else KERNELS_DIR
    specs = sorted(p for p in directory.glob("*.py") if not p.name.startswith("_"))
    sources = {p.stem for p in directory.glob("*.cu") if not p.name.startswith("_")}
    orphans = sources - {p.stem for p in specs}
    if orphans:
        raise SuiteError(f"kernels without a spec (.py): {sorted(orphans)}")
    return [load_kernel(p) for p in specs]


# --- running -----------------------------------------------------------------------------


def positional_args(spec: KernelSpec, args: dict) -> list:
    """The launch arguments in the signature's order (copies of the arrays)."""
    copied = copy_args(args)
    return [copied[p.name] for p in spec.params]


_compiled: dict[str, object] = {}


def compiled_module(source: str):
    """qgpu.cuda.compile(source), cached per source text."""
    if source not in _compiled:
        _compiled[source] = compile_cuda(source)
    return _compiled[source]


def run_case(spec: KernelSpec, launch: dict, engine: str = "interp"):
    """Launch one configuration through the public launch API (engine: a name of
    qgpu.cuda.ENGINES: "interp", or "model", "model-check", "model-forced" once
    qgpu.runtime is imported).

    Returns (outputs, expected, tokens): the final contents of every pointer argument after
    the launch, the oracle's, and the launch's token count (None when the launch result
    does not report one)."""
    function = compiled_module(spec.source).get_function(spec.kernel)
    values = positional_args(spec, launch["args"])
    if engine == "interp":
        result = function(launch["grid"], launch["block"], values)
    else:
        result = function(launch["grid"], launch["block"], values, engine=engine)
    outputs = {p.name: v for p, v in zip(spec.params, values, strict=True) if p.pointer}
    tokens = getattr(result, "tokens", None)
    if tokens is not None and not isinstance(tokens, int):
        tokens = len(tokens)
    return outputs, spec.oracle(launch), tokens


# --- the suite as a table ----------------------------------------------------------------


def case_row(spec: KernelSpec, index: int, engine: str = "interp") -> dict:
    """One launch of the suite as a table row: whether the outputs equal the oracle, and
    the launch's trace tokens (None when the engine does not report them)."""
    row = {"case": spec.case_id(index), "ok": False, "tokens": None, "error": None}
    try:
        outputs, expected, tokens = run_case(spec, spec.launches[index], engine)
    except QgpuError as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
    else:
        row["ok"] = all(same_bits(outputs[k], v) for k, v in expected.items())
        row["tokens"] = tokens
    return row


def suite_table(specs: list[KernelSpec], engine: str = "interp", pool=None,
                **options) -> list[dict]:
    """case_row for every (kernel, launch), in order: here, or in batches on a campaign
    pool's workers (qgpu.campaign, e.g. on Ray), each of which loads the kernels' specs
    from their files and, for a model engine, the machine once. On an engine that runs
    launches together (cuda.BATCH_ENGINES: the model's "model", "model-check") the
    launches here, or a worker's batch, go in one launch_many call (options: its
    in_flight, jobs)."""
    if pool is None:
        cases = [(spec, index) for spec in specs for index in range(len(spec.launches))]
        if engine in BATCH_ENGINES:
            return batched_rows(cases, engine, **options)
        return [case_row(spec, index, engine) for spec, index in cases]
    launches = [(str(spec.path), index) for spec in specs for index in range(len(spec.launches))]
    batches = batched(launches, batch_size(len(launches), pool.workers))
    return [row for rows in pool.map(partial(_rows, engine=engine), batches,
                                     partial(_worker_setup, engine), desc=f"suite ({engine})",
                                     unit="launch") for row in rows]


def register_engines(engine: str) -> None:
    """For a model engine, import qgpu.runtime, which registers the model's engines: the
    one import against the pipeline (README, "Architecture"), made by main and by its
    campaign workers; the suite sits below the runtime."""
    if engine != "interp":
        import qgpu.runtime  # noqa: F401


def _worker_setup(engine: str) -> dict:
    """A campaign worker's set-up: the engine registered; its specs, loaded as batches
    name them."""
    register_engines(engine)
    return {}


def _rows(specs: dict, batch: list[tuple[str, int]], engine: str) -> list[dict]:
    """A campaign batch: case_row of each (spec file, launch index)."""
    for path, _ in batch:
        if path not in specs:
            specs[path] = load_kernel(Path(path))
    if engine in BATCH_ENGINES:
        return batched_rows([(specs[path], index) for path, index in batch], engine)
    return [case_row(specs[path], index, engine) for path, index in batch]


def batched_rows(cases: list[tuple[KernelSpec, int]], engine: str, **options) -> list[dict]:
    """case_row of each (spec, launch index), the launches run together: one launch_many
    call on a batch engine (the model's: generated in one batch, runtime.generate_many)."""
    values, launches = [], []
    for spec, index in cases:
        launch = spec.launches[index]
        values.append(positional_args(spec, launch["args"]))
        launches.append((compiled_module(spec.source).get_function(spec.kernel),
                         launch["grid"], launch["block"], values[-1]))
    results = launch_many(launches, engine=engine, errors="return", **options)
    rows = []
    for (spec, index), args, result in zip(cases, values, results, strict=True):
        row = {"case": spec.case_id(index), "ok": False, "tokens": None, "error": None}
        if isinstance(result, QgpuError):
            row["error"] = f"{type(result).__name__}: {result}"
        else:
            outputs = {p.name: v for p, v in zip(spec.params, args, strict=True) if p.pointer}
            row["ok"] = all(same_bits(outputs[k], v)
                            for k, v in spec.oracle(spec.launches[index]).items())
            row["tokens"] = result.tokens
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    """python -m qgpu.suite [--engine E] [--jobs N] [NAME ...]: run the suite, print one
    line per launch (status, tokens) and a summary; exit status 1 when any launch fails.
    On the model ("model", "model-check") the launches go through runtime.generate_many
    (`jobs` threads, each generating one launch at a time by default)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m qgpu.suite", description=main.__doc__)
    parser.add_argument("names", nargs="*", help="suite kernel names (default: all)")
    parser.add_argument("--engine", default="interp",
                        help="interp, model, model-check (generate, then compare with the "
                             "interpreter) or model-forced (the check by teacher forcing)")
    parser.add_argument("--jobs", type=int, choices=(1, 2), default=1,
                        help="model, model-check: threads generating launches, each one "
                             "at a time (default 1; 2 uses both cores of a two-core machine)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    register_engines(args.engine)
    try:   # named kernels alone: loading one parses its source with clang (~0.3 s)
        specs = load_suite() if not args.names else [load_named(n) for n in args.names]
    except SuiteError as exc:
        print(f"python -m qgpu.suite: error: {exc}", file=sys.stderr)
        return 2
    try:
        pool = open_pool(args.ray, args.ray_workers) if args.ray is not None else None
    except QgpuError as exc:
        print(f"python -m qgpu.suite: error: {exc}", file=sys.stderr)
        return 2
    if pool is None:
        options = {"jobs": args.jobs} if args.engine in BATCH_ENGINES else {}
        rows = suite_table(specs, args.engine, **options)
    else:
        with pool:
            rows = suite_table(specs, args.engine, pool)
    for row in rows:
        status = "ok" if row["ok"] else ("ERROR " + row["error"] if row["error"] else "WRONG")
        tokens = "" if row["tokens"] is None else f"{row['tokens']:7d} tokens"
        print(f"{row['case']:48s} {tokens:14s} {status}")
    passed = sum(r["ok"] for r in rows)
    counted = [r["tokens"] for r in rows if r["tokens"] is not None]
    total = f", {sum(counted)} tokens in all" if counted else ""
    print(f"{len(specs)} kernels, {passed}/{len(rows)} launches equal to the oracle{total}")
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    # main of the imported module, not of __main__: Ray's workers import the campaign's
    # functions by their module's name
    from qgpu import suite

    raise SystemExit(suite.main())
