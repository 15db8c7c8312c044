"""The executor interface: map a picklable function over tasks, results in task order."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..errors import DPCoreError


class ExecutorError(DPCoreError):
    """A worker died or the execution backend is unreachable."""


class Executor:
    name = "executor"
    workers = 1

    def map(self, fn: Callable, tasks: Sequence) -> list:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
