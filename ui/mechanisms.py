"""The registry as the app sees it: every mechanism that loads, and those that do not.

A mechanism whose module fails to import (e.g. mid-development) must not take the
pages down: it is left out and named in a caption.
"""

from __future__ import annotations

import logging

from dpcore.mechanisms import registry

log = logging.getLogger("dpcore.app")
_reported: set[str] = set()


def loadable() -> tuple[list, list[str]]:
    """(mechanism classes that import, names of those that do not), in registry order."""
    ok, broken = [], []
    for name in registry.names():
        try:
            ok.append(registry.get(name))
        except Exception as exc:  # an import error in one module must not hide the others
            if name not in _reported:  # once per server, not on every rerun
                _reported.add(name)
                log.warning("mechanism %s could not be loaded: %s: %s", name, type(exc).__name__, exc)
            broken.append(name)
    return ok, broken


def for_workloads() -> tuple[list, list[str]]:
    """Mechanisms the Release page offers (those that answer a marginal workload)."""
    ok, broken = loadable()
    return [m for m in ok if m.needs_workload and m.output != "model"], broken
