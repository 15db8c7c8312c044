"""One registry pattern for everything the user picks by name: mechanisms and learners.

A registry maps a public name to ``"module:Class"``; classes load on first use (the app starts fast and a
heavy dependency loads only when its entry is used).  Adding an entry is one module plus one line in the
registry that lists it (``dpcore/mechanisms/registry.py``, ``dpcore/learning/registry.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .errors import ParameterError


class Registry(Mapping):
    """Name -> class, loaded lazily, in the order the entries are listed (a read-only mapping)."""

    def __init__(self, kind: str, entries: dict[str, str]) -> None:
        self.kind = kind
        self._entries = dict(entries)

    def get_class(self, name: str):
        key = str(name).strip().lower()
        if key not in self._entries:
            raise ParameterError(f"Unknown {self.kind} {name!r}; choose one of {', '.join(self._entries)}.")
        module, cls = self._entries[key].split(":")
        return getattr(importlib.import_module(module), cls)

    def __getitem__(self, name: str):
        if str(name).strip().lower() not in self._entries:
            raise KeyError(name)
        return self.get_class(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return list(self._entries)

    def classes(self) -> list:
        return [self.get_class(n) for n in self._entries]
