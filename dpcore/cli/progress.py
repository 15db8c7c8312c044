"""The CLI's progress bar: tqdm on stderr, fed by a mechanism's ``progress(t, T, message, info)``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tqdm import tqdm


class ProgressBar:
    """A ``progress`` callback drawing a tqdm bar (nothing when ``quiet``); use as a context manager."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self._bar: tqdm[Any] | None = None

    def __call__(self, t: int, T: int, message: str, info: dict) -> None:
        if self.quiet or T <= 0:
            return
        bar = self._bar
        if bar is None:
            from tqdm import tqdm

            bar = self._bar = tqdm(total=T, file=sys.stderr, unit="round", dynamic_ncols=True, leave=True)
        if bar.total != T:
            bar.total = T
        bar.set_description_str(str(message)[:40], refresh=False)
        bar.n = min(t, T)
        bar.refresh()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
