"""The Ray backend of :mod:`dpcore.executors`, for users who outgrow one machine.

``RayExecutor(address)`` connects to a running Ray cluster (``ray start --head`` on
the head node; the address comes from ``--executor ray:ADDRESS`` or the
``DPCORE_RAY_ADDRESS`` environment variable) or, with no address / ``"local"``,
starts a private Ray instance on this machine.  Tasks are the same picklable
module-level functions the process pool runs; every random draw was made in the
parent, so a run gives the same result here as in any other executor.

Workers must be able to import ``dpcore`` (same environment on every node, or a
Ray runtime environment that ships it).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence

from .base import Executor, ExecutorError

_RUN_LOCALLY = (
    "Run locally instead (--executor local, the default), or check that the cluster is up "
    "(`ray status` on the head node)."
)


def _apply(fn: Callable, task):
    return fn(task)


def _check_reachable(address: str, timeout: float = 3.0) -> None:
    """Fail fast with a clear message when host:port does not answer.

    ``ray.init`` would otherwise retry for a long time before giving up.
    """
    target = address.split("://", 1)[-1]
    if target == "auto":
        return  # ray resolves it from the local node's files and fails fast itself
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise ExecutorError(
            f"Ray address {address!r} is not HOST:PORT (e.g. 10.0.0.5:6379 or ray://10.0.0.5:10001). " + _RUN_LOCALLY
        )
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ExecutorError(
            f"The Ray cluster at {address} is unreachable ({exc.strerror or exc}). " + _RUN_LOCALLY
        ) from None


class RayExecutor(Executor):
    """Map tasks over Ray workers, results in task order."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        try:
            import ray
        except ImportError:
            raise ExecutorError(
                "Ray is not installed in this environment (pip install 'ray[default]'). " + _RUN_LOCALLY
            ) from None
        self._ray = ray
        address = (address or "").strip() or None
        self.address = None if address in (None, "local") else address
        self._started = False
        if not ray.is_initialized():
            try:
                if self.address is None:
                    # A private local instance; small object store: tasks are small.
                    ray.init(
                        num_cpus=num_cpus or os.cpu_count() or 1,
                        object_store_memory=200 * 1024**2,
                        include_dashboard=False,
                        log_to_driver=False,
                        ignore_reinit_error=True,
                    )
                else:
                    _check_reachable(self.address)
                    ray.init(
                        address=self.address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True
                    )
            except ExecutorError:
                raise
            except Exception as exc:  # ConnectionError, RuntimeError, ... depending on the Ray version
                raise ExecutorError(
                    f"Could not connect to Ray at {self.address or 'a local instance'}: {exc}. " + _RUN_LOCALLY
                ) from None
            self._started = True
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote = ray.remote(_apply)

    def map(self, fn: Callable, tasks: Sequence) -> list:
        tasks = list(tasks)
        if not tasks:
            return []
        ray = self._ray
        fn_ref = ray.put(fn)
        refs = [self._remote.remote(fn_ref, t) for t in tasks]
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as exc:
            # The task raised: re-raise the original error (e.g. an OracleError with its message).
            cause = exc.as_instanceof_cause() if hasattr(exc, "as_instanceof_cause") else exc
            if isinstance(getattr(exc, "cause", None), Exception):
                raise exc.cause from None
            raise cause from None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.RayError) as exc:
            for r in refs:
                ray.cancel(r, force=True)
            raise ExecutorError(
                f"A Ray worker died ({type(exc).__name__}); the run stopped and nothing was "
                "released. Try fewer samples per round, or run locally."
            ) from None

    def close(self) -> None:
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()
        self._started = False
