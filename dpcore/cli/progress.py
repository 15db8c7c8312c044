"""The CLI's progress bar: tqdm on stderr, fed by a mechanism's ``progress(t, T, message, info)``."""

from __future__ import annotations

import sys


class ProgressBar:
    """A ``progress`` callback drawing a tqdm bar (nothing when ``quiet``); use as a context manager."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self._bar = None

    def __call__(self, t: int, T: int, message: str, info: dict) -> None:
        if self.quiet or T <= 0:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=T, file=sys.stderr, unit="round", dynamic_ncols=True, leave=True)
        if self._bar.total != T:
            self._bar.total = T
        self._bar.set_description_str(str(message)[:40], refresh=False)
        self._bar.n = min(t, T)
        self._bar.refresh()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
