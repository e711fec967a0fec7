"""campaign: many launches run as batches, in this process or on a Ray cluster. Owns the
one place qgpu talks to Ray (an extra: `pip install 'qgpu[ray]'`); the callers (the
suite, the model fuzzer, the margin report) only hand it batches.

    pool = campaign.open_pool(args.ray, args.ray_workers)   # None: this process
    with pool:
        for results in pool.map(task, batches, setup, desc="fuzz", unit="case"):
            ...                       # one list per batch, in the batches' order

`setup()` builds what every batch needs (the compiled machine) and `task(state, batch)`
returns the batch's results as a list. Both must be importable by name (module-level
functions, or functools.partial of them), because a Ray worker imports them: a worker
process calls `setup` once and keeps its state for every later batch it runs.

- LocalPool: one process, no dependency: setup once, then the batches in order.
- RayPool: `address` None starts a local Ray with `workers` CPUs (its worker processes;
  stopped again on exit); an address ("auto", "HOST:PORT", "ray://HOST:10001") connects
  to a running cluster and uses every CPU it has. Each batch is one Ray task of one CPU;
  a few more tasks than CPUs are in flight, so a worker starts its next batch at once.
  Results stream back as they finish (the progress bar counts them), and are yielded in
  the batches' order, so a campaign on Ray prints what the same campaign prints here. A
  task whose worker process dies (killed, out of memory, its node lost) is run again on
  another worker by Ray (`max_retries`); only a batch that kills RETRIES workers in a
  row ends the campaign. An exception raised by `task` itself is not retried: it is
  raised here (the callers catch their launches' QgpuErrors inside `task` and report
  them as results).
- Workers must run the driver's qgpu: each batch carries a digest of the driver's
  package sources, and a worker whose sources differ refuses it by name (a cluster whose
  nodes run another checkout would give other answers, not an error).
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from qgpu.errors import QgpuError
from qgpu.progress import progress

__all__ = ["CampaignError", "LocalPool", "RayPool", "batched", "open_pool",
           "sources_digest"]

DEFAULT_WORKERS = 2      # a local Ray's CPUs (this machine has two cores)
RETRIES = 3              # Ray runs a batch again after its worker died, up to this often
IN_FLIGHT_PER_CPU = 2    # tasks queued per CPU: a worker never waits for its next batch
_PACKAGE = Path(__file__).resolve().parent


class CampaignError(QgpuError):
    """A campaign that cannot run: Ray missing or unreachable, a worker running other
    sources, a batch whose workers kept dying."""


def batched(items: Sequence, size: int) -> list[list]:
    """`items` cut into lists of `size` (the last one shorter), in order."""
    if size < 1:
        raise CampaignError(f"batch size {size}: must be at least 1")
    return [list(items[i:i + size]) for i in range(0, len(items), size)]


def batch_size(n_items: int, workers: int, per_worker: int = 8, most: int = 32) -> int:
    """A batch size giving each worker about `per_worker` batches (so that a slow batch
    at the end leaves little idle time and the bar moves), at most `most` items."""
    return max(1, min(most, -(-n_items // max(1, workers * per_worker))))


_digest: str | None = None


def sources_digest() -> str:
    """sha256 of qgpu's package sources (.py and .c files, by relative path): what a
    worker must share with the driver for its results to be the driver's."""
    global _digest
    if _digest is None:
        h = hashlib.sha256()
        for path in sorted(_PACKAGE.rglob("*")):
            if path.suffix in (".py", ".c") and "__pycache__" not in path.parts:
                h.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
        _digest = h.hexdigest()
    return _digest


class _Pool:
    """What both pools share: the progress bar over the items of the batches."""

    workers: int

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        pass

    @staticmethod
    def _bar(batches: Sequence, desc: str, unit: str, enabled: bool):
        return progress(total=sum(len(b) for b in batches), desc=desc, unit=unit,
                        enabled=enabled, leave=True)


class LocalPool(_Pool):
    """The batches in this process, one after the other (no dependency)."""

    workers = 1

    def map(self, task: Callable, batches: Sequence[Sequence], setup: Callable | None = None,
            *, desc: str = "campaign", unit: str = "it", progress: bool = True,
            postfix: Callable[[list], str] | None = None) -> Iterator[list]:
        state = setup() if setup is not None else None
        bar = self._bar(batches, desc, unit, progress)
        try:
            for batch in batches:
                results = task(state, batch)
                _advance(bar, batch, results, postfix)
                yield results
        finally:
            bar.close()


def _advance(bar, batch, results, postfix) -> None:
    if postfix is not None:
        bar.set_postfix_str(postfix(results), refresh=False)
    bar.update(len(batch))


# --- Ray ---------------------------------------------------------------------------------

_states: dict[bytes, Any] = {}   # a worker process's setup results, by pickled setup


def _run_batch(setup: Callable | None, task: Callable, batch: Sequence,
               digest: str) -> tuple[str, list]:
    """The Ray task: one batch on this worker process, after its setup (once per
    process). Returns (the worker's "host:pid", the batch's results)."""
    if digest != sources_digest():
        raise CampaignError(
            f"worker {socket.gethostname()} (pid {os.getpid()}) runs qgpu sources "
            f"{sources_digest()[:12]} from {_PACKAGE}, the driver {digest[:12]}: install "
            f"the driver's qgpu on every node")
    state = None
    if setup is not None:
        key = pickle.dumps(setup)
        if key not in _states:
            _states[key] = setup()
        state = _states[key]
    return f"{socket.gethostname()}:{os.getpid()}", task(state, batch)


def _import_ray():
    try:
        import ray
    except ImportError as exc:
        raise CampaignError("--ray needs Ray: pip install 'qgpu[ray]' "
                            f"(import ray: {exc})") from exc
    return ray


class RayPool(_Pool):
    """Batches as Ray tasks on a local Ray (address None: started here with `workers`
    CPUs, stopped by close) or on the cluster at `address`. `worker_batches` counts the
    batches each worker process ("host:pid") returned."""

    def __init__(self, address: str | None = None, workers: int = DEFAULT_WORKERS,
                 retries: int = RETRIES):
        if workers < 1:
            raise CampaignError(f"--ray-workers {workers}: must be at least 1")
        ray = self._ray = _import_ray()
        self.retries = retries
        self.worker_batches: dict[str, int] = {}
        self._started = False
        if ray.is_initialized():
            pass  # a Ray this process started already (tests): used as it is
        elif address is None:
            ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.ERROR,
                     object_store_memory=256 << 20)
            self._started = True
        else:
            try:
                ray.init(address=address, logging_level=logging.WARNING)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise CampaignError(f"--ray {address}: no Ray cluster reached there "
                                    f"({type(exc).__name__}: {exc})") from exc
        self.workers = max(1, int(ray.cluster_resources().get("CPU", workers)))
        self._remote = ray.remote(_run_batch).options(num_cpus=1, max_retries=retries,
                                                      retry_exceptions=False)

    def close(self) -> None:
        if self._started:
            self._ray.shutdown()
            self._started = False

    def map(self, task: Callable, batches: Sequence[Sequence], setup: Callable | None = None,
            *, desc: str = "campaign", unit: str = "it", progress: bool = True,
            postfix: Callable[[list], str] | None = None) -> Iterator[list]:
        ray = self._ray
        for function in (task, setup):
            _importable(function)
        digest = sources_digest()
        setup_ref = ray.put(setup)   # one copy in the object store, not one per task
        task_ref = ray.put(task)
        waiting = iter(enumerate(batches))
        pending: dict[Any, int] = {}     # object ref -> batch index
        done: dict[int, list] = {}
        next_out = 0
        bar = self._bar(batches, desc, unit, progress)

        def submit(count: int) -> None:
            for index, batch in _take(waiting, count):
                pending[self._remote.remote(setup_ref, task_ref, batch, digest)] = index

        try:
            submit(self.workers * IN_FLIGHT_PER_CPU)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    index = pending.pop(ref)
                    worker, results = self._get(ref, index)
                    self.worker_batches[worker] = self.worker_batches.get(worker, 0) + 1
                    done[index] = results
                    _advance(bar, batches[index], results, postfix)
                submit(len(ready))
                while next_out in done:
                    yield done.pop(next_out)
                    next_out += 1
        finally:
            bar.close()
            for ref in pending:   # interrupted: the batches still queued or running
                ray.cancel(ref, force=True)

    def _get(self, ref, index: int):
        ray = self._ray
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as exc:   # task() raised: its own exception
            cause = exc.cause if isinstance(exc.cause, BaseException) else exc
            raise cause from None
        except ray.exceptions.RayError as exc:       # its workers died RETRIES + 1 times
            raise CampaignError(f"batch {index}: {type(exc).__name__} after "
                                f"{self.retries} retries: {str(exc).splitlines()[0]}") from exc


def _importable(function) -> None:
    """Refuse a function a worker could not import: one of the script run as __main__
    (its module has another name there) or a local one."""
    inner = getattr(function, "func", function)   # functools.partial
    if inner is None:
        return
    module, name = getattr(inner, "__module__", None), getattr(inner, "__qualname__", "")
    if module == "__main__" or "<" in name:
        raise CampaignError(f"{module}.{name}: a Ray worker cannot import it (a campaign's "
                            f"task and setup must be module-level functions of an "
                            f"importable module)")


def _take(iterator: Iterator, count: int) -> Iterable:
    for _ in range(count):
        item = next(iterator, None)
        if item is None:
            return
        yield item


def open_pool(ray: str | None, workers: int = DEFAULT_WORKERS):
    """The pool a command's `--ray [ADDRESS]` / `--ray-workers N` ask for: None (no
    --ray) -> LocalPool; "local" (--ray alone) -> a local Ray of `workers` CPUs; anything
    else: the cluster's address."""
    if ray is None:
        return LocalPool()
    if ray != "local" and ray != "auto" and ":" not in ray:
        # argparse gives --ray the word after it: `--ray NAME` is more likely a positional
        raise CampaignError(f"--ray {ray}: not an address (auto, HOST:PORT, "
                            f"ray://HOST:PORT); put other arguments before --ray")
    return RayPool(None if ray == "local" else ray, workers)


def add_arguments(parser) -> None:
    """The --ray and --ray-workers options of a campaign command (argparse)."""
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                        help="run the batches on Ray (pip install 'qgpu[ray]'): alone, a "
                             "local Ray started here; with an address, that cluster")
    parser.add_argument("--ray-workers", type=int, default=DEFAULT_WORKERS, metavar="N",
                        help=f"CPUs of the local Ray --ray starts (default "
                             f"{DEFAULT_WORKERS}; a cluster's are its own)")
