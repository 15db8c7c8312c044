"""Where independent oracle calls run.

An :class:`Executor` maps a picklable module-level function over a list of
picklable tasks and returns the results *in task order*.  Every random draw is
made in the parent before tasks are built, so a fixed seed gives identical results
whichever executor runs them.

* ``serial`` -- in this process (tests, tiny problems, the app's teaching presets);
* ``local`` -- a process pool over this machine's cores (the default for big runs);
* ``ray[:ADDRESS]`` -- a Ray cluster (``DPCORE_RAY_ADDRESS`` or an explicit address),
  for users who outgrow one machine.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from .base import Executor, ExecutorError

__all__ = ["Executor", "ExecutorError", "LocalProcessExecutor", "SerialExecutor", "executor_from_spec"]


class SerialExecutor(Executor):
    name = "serial"

    def map(self, fn, tasks):
        return [fn(t) for t in tasks]


class LocalProcessExecutor(Executor):
    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing as mp

            # forkserver: safe from threaded parents (the app runs mechanisms off its script thread).
            ctx = mp.get_context("forkserver")
            # Never preload the parent's __main__: under Streamlit (and its AppTest) that is app.py,
            # which must not run inside a worker. Tasks are module-level dpcore functions.
            ctx.set_forkserver_preload(["dpcore.executors"])
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx)
        return self._pool

    def map(self, fn, tasks):
        tasks = list(tasks)
        if len(tasks) <= 1:
            return [fn(t) for t in tasks]
        pool = self._get_pool()
        try:
            with _without_main_script():  # workers are started during submission
                futures = pool.map(fn, tasks)
            return list(futures)
        except BrokenProcessPool:
            codes = _exit_codes(pool)
            self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            how = f" (exit code {', '.join(str(c) for c in codes)})" if codes else ""
            raise ExecutorError(
                f"A worker process died{how}: out of memory or killed. The run stopped and nothing "
                "was released. Try fewer samples per round or the serial executor."
            ) from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


_MAIN_LOCK = threading.Lock()


@contextlib.contextmanager
def _without_main_script():
    """Hide the parent's ``__main__`` script from workers started inside this block.

    multiprocessing re-runs the parent's main *file* in every new worker
    (``spawn.get_preparation_data``).  Under Streamlit that file is app.py: running it in
    a worker fails (and would be wrong).  A stand-in module without ``__file__`` makes
    workers skip that step; a ``python -m`` main is imported by name and left alone.
    """
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or not hasattr(main, "__file__"):
        yield
        return
    with _MAIN_LOCK:
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            yield
        finally:
            sys.modules["__main__"] = main


def _exit_codes(pool: ProcessPoolExecutor) -> list[int]:
    """Exit codes of the pool's dead workers (a negative code is the killing signal)."""
    try:
        return sorted({p.exitcode for p in pool._processes.values() if p.exitcode not in (None, 0)})
    except Exception:  # private attribute: best effort, only for the message
        return []


def executor_from_spec(spec: str | None) -> Executor:
    """``None``/``local`` -> process pool, ``serial``, ``ray`` / ``ray:ADDRESS``.

    With no spec, ``DPCORE_EXECUTOR`` decides, and a set ``DPCORE_RAY_ADDRESS`` selects Ray.
    """
    spec = spec or os.environ.get("DPCORE_EXECUTOR") or ("ray" if os.environ.get("DPCORE_RAY_ADDRESS") else "local")
    spec = spec.strip()
    if spec == "serial":
        return SerialExecutor()
    if spec == "local":
        return LocalProcessExecutor()
    if spec.startswith("ray"):
        from .ray_cluster import RayExecutor

        address = spec.split(":", 1)[1] if ":" in spec else os.environ.get("DPCORE_RAY_ADDRESS")
        return RayExecutor(address)
    raise ExecutorError(f"Unknown executor {spec!r}: use 'local', 'serial' or 'ray[:ADDRESS]'.")
