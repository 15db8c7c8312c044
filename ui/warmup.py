"""Import the heavy modules of the later pages in the background, once per server process.

The first page only needs pandas; the Release, Results and teaching pages need the
mechanisms (scipy, PySCIPOpt), the run machinery and altair.  Importing them in a
daemon thread after the first page has been sent makes the first switch to those
pages as quick as the later ones.  Only code is loaded here: no data, nothing per
session.
"""

from __future__ import annotations

import logging
import threading
import time

_started = False
_lock = threading.Lock()


#: Seconds to wait first, so the browser can draw the first page without competing for the CPU.
DELAY = 2.0


def _import_all() -> None:
    time.sleep(DELAY)
    try:
        import altair  # noqa: F401  (charts on Results/Compare/teaching)

        from . import charts, runner  # noqa: F401
        from .mechanisms import loadable

        loadable()  # imports every registered mechanism module
    except Exception:  # a warm-up failure must never affect a page; the page will report it
        logging.getLogger("dpcore.app").warning("background warm-up failed", exc_info=True)


def start_once() -> None:
    global _started
    with _lock:
        if _started:
            return
        _started = True
    threading.Thread(target=_import_all, name="dpcore-warmup", daemon=True).start()
